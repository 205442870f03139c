//go:build !linux

package badgerkv

import "os"

// syncData syncs f (fsync where fdatasync is not at hand).
func syncData(f *os.File) error { return f.Sync() }
