package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mnemohq/mnemo/acl"
)

// KeyFile holds the node's ed25519 private key (acl.Identity.EncodePrivate).
const KeyFile = "node.key"

// readIdentity reads dir's key file. ok is false if there is none; a file
// that exists but does not decode is an error (the node refuses to start
// rather than silently becoming another node).
func readIdentity(dir string) (id acl.Identity, ok bool, err error) {
	path := filepath.Join(dir, KeyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return acl.Identity{}, false, nil
	}
	if err != nil {
		return acl.Identity{}, false, fmt.Errorf("node: read %s: %w", path, err)
	}
	id, err = acl.DecodeIdentity(b)
	if err != nil {
		return acl.Identity{}, false, fmt.Errorf("node: %s: %w (restore it from a backup; deleting it makes this a new node whose earlier grants no longer count)", path, err)
	}
	return id, true, nil
}

// loadIdentity returns the identity in dir's key file, or a new one (not
// yet written: see saveIdentity) when there is none.
func loadIdentity(dir string) (id acl.Identity, existed bool, err error) {
	id, existed, err = readIdentity(dir)
	if err != nil || existed {
		return id, existed, err
	}
	id, err = acl.GenerateIdentity(rand.Reader)
	return id, false, err
}

// saveIdentity writes a new key file (mode 0600). The caller holds the
// directory lock, so nobody else writes it concurrently.
func saveIdentity(dir string, id acl.Identity) error {
	if err := writeFileAtomic(filepath.Join(dir, KeyFile), id.EncodePrivate()); err != nil {
		return fmt.Errorf("node: write %s: %w", KeyFile, err)
	}
	return nil
}
