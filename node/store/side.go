package store

import (
	"bytes"
	"fmt"
	"strings"
)

// Side data is derived, local-only state a feature keeps beside the
// records in the same KV (embedding vectors: node/memory/semantic), under
//
//	v/<space>\x00<key>
//
// It is never replicated, never part of a digest or fingerprint, and not
// written through the group-commit pipeline: a side write is its own synced
// KV transaction and does not order with record writes. Its owner rebuilds
// or prunes it from the records (a side value may outlive its record).

// sideKey names key in space; space must not contain a NUL byte.
func sideKey(space, key string) []byte { return []byte("v/" + space + "\x00" + key) }

func checkSpace(space string) error {
	if space == "" || strings.IndexByte(space, 0) >= 0 {
		return fmt.Errorf("store: side space %q must be non-empty and without NUL", space)
	}
	return nil
}

// PutSide writes the values of space in one transaction; a nil value
// deletes its key. It returns ErrTxnTooBig when they do not fit in one.
func (s *Store) PutSide(space string, values map[string][]byte) error {
	if err := checkSpace(space); err != nil {
		return err
	}
	return s.kv.Update(func(w Writer) error {
		for k, v := range values {
			var err error
			if v == nil {
				err = w.Delete(sideKey(space, k))
			} else {
				err = w.Set(sideKey(space, k), bytes.Clone(v))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ScanSide calls fn for every key of space in key order, over one
// snapshot; value is valid only during the call. An error from fn stops
// the walk and is returned.
func (s *Store) ScanSide(space string, fn func(key string, value []byte) error) error {
	if err := checkSpace(space); err != nil {
		return err
	}
	prefix := sideKey(space, "")
	return s.kv.View(func(r Reader) error {
		return r.Iterate(prefix, func(k, v []byte) error { return fn(string(k[len(prefix):]), v) })
	})
}
