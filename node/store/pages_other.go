//go:build !linux

package store

// ReleaseFilePages is a no-op outside Linux; see pages_linux.go.
func (s *Store) ReleaseFilePages() int64 { return 0 }
