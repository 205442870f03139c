package node

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

// TokensFile lists the principal-bound tokens issued by the node: for each,
// the SHA-256 of the token (never the token itself), its principal and when
// it was issued. Mode 0600.
const TokensFile = "tokens.json"

type tokenEntry struct {
	SHA256    string            `json:"sha256"`
	Principal namespace.Address `json:"principal"`
	IssuedAt  time.Time         `json:"issued_at"`
}

// tokens is the node's set of principal-bound tokens. Safe for concurrent use.
type tokens struct {
	path string
	now  func() time.Time

	mu      sync.RWMutex
	entries []tokenEntry
	byHash  map[[sha256.Size]byte]namespace.Address
}

// loadTokens reads dir's tokens file (none: no tokens). The caller holds
// the directory lock.
func loadTokens(dir string, now func() time.Time) (*tokens, error) {
	t := &tokens{path: filepath.Join(dir, TokensFile), now: now, byHash: map[[sha256.Size]byte]namespace.Address{}}
	b, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node: read %s: %w", t.path, err)
	}
	if err := json.Unmarshal(b, &t.entries); err != nil {
		return nil, fmt.Errorf("node: %s: %w", t.path, err)
	}
	for i, e := range t.entries {
		h, err := hex.DecodeString(e.SHA256)
		if err != nil || len(h) != sha256.Size || e.Principal.Kind != namespace.KindAgent || e.Principal.Path != "" {
			return nil, fmt.Errorf("node: %s: entry %d is malformed", t.path, i)
		}
		t.byHash[[sha256.Size]byte(h)] = e.Principal
	}
	return t, nil
}

// Lookup returns the principal token is bound to. Tokens are 256-bit
// random strings, so looking up their hash in a map leaks nothing useful
// through timing.
func (t *tokens) Lookup(token string) (namespace.Address, bool) {
	h := sha256.Sum256([]byte(token))
	t.mu.RLock()
	defer t.mu.RUnlock()
	p, ok := t.byHash[h]
	return p, ok
}

// Issue makes a new token bound to principal and records its hash.
func (t *tokens) Issue(principal namespace.Address) (string, error) {
	if principal.Kind != namespace.KindAgent || principal.Path != "" || principal.IsZero() {
		return "", fmt.Errorf("node: a token is bound to an agent principal (agent://NAME), not %q", principal)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("node: token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	h := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	defer t.mu.Unlock()
	entries := append(slices.Clone(t.entries), tokenEntry{SHA256: hex.EncodeToString(h[:]), Principal: principal, IssuedAt: t.now().UTC()})
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(t.path, append(b, '\n')); err != nil {
		return "", fmt.Errorf("node: write %s: %w", TokensFile, err)
	}
	t.entries = entries
	t.byHash[h] = principal
	return tok, nil
}

// Principals lists the principals tokens are bound to.
func (t *tokens) Principals() []namespace.Address {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []namespace.Address
	for _, e := range t.entries {
		out = append(out, e.Principal)
	}
	return out
}
