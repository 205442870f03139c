package node

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names inside the data directory.
const (
	TokenFile = "token"
	InfoFile  = "node.json"
)

// minTokenLen rejects a token file that was truncated or hand-edited into
// something guessable.
const minTokenLen = 16

// Info is the content of node.json: how to reach the running node.
type Info struct {
	PID   int    `json:"pid"`
	HTTP  string `json:"http"`  // base URL, e.g. http://127.0.0.1:7070
	Agent string `json:"agent"` // owner, e.g. agent://alice
}

// ReadToken returns the owner token stored in dir.
func ReadToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("node: read token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen {
		return "", fmt.Errorf("node: token file %s is too short (%d bytes); delete it to have the node write a new one",
			filepath.Join(dir, TokenFile), len(tok))
	}
	return tok, nil
}

// ReadInfo returns the node.json of dir. A node that crashed leaves a stale
// file behind: treat the answer as a hint and confirm by connecting.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return info, fmt.Errorf("node: read %s: %w", InfoFile, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("node: parse %s: %w", filepath.Join(dir, InfoFile), err)
	}
	if info.HTTP == "" {
		return info, fmt.Errorf("node: %s has no http address", filepath.Join(dir, InfoFile))
	}
	return info, nil
}

// loadOrCreateToken reads dir's token, writing a new one first if none
// exists. The caller holds the directory lock.
func loadOrCreateToken(dir string) (tok string, created bool, err error) {
	tok, err = ReadToken(dir)
	if err == nil {
		return tok, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("node: token: %w", err)
	}
	tok = base64.RawURLEncoding.EncodeToString(raw[:])
	if err := writeFileAtomic(filepath.Join(dir, TokenFile), []byte(tok+"\n")); err != nil {
		return "", false, fmt.Errorf("node: write token: %w", err)
	}
	return tok, true, nil
}

// writeFileAtomic writes a 0600 file via a synced temporary file and a
// rename, so a reader sees the old content or the new, never a torn write.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeInfo(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, InfoFile), append(b, '\n'))
}
