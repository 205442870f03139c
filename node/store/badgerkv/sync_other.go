//go:build !linux

package badgerkv

import "os"

// fdatasync syncs the file at path (fsync where fdatasync is not at hand).
func fdatasync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
