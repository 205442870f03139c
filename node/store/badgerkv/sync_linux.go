package badgerkv

import (
	"os"
	"syscall"
)

// fdatasync syncs the file at path: its data, and its size (a log's
// writes change none of its other metadata that matters); or the
// directory at path, with the names created in it.
func fdatasync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = syscall.Fdatasync(int(f.Fd()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
