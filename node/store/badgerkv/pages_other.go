//go:build !linux

package badgerkv

// ReleaseFilePages is a no-op outside Linux; see pages_linux.go.
func (k *KV) ReleaseFilePages() int64 { return 0 }
