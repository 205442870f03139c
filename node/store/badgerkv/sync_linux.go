package badgerkv

import (
	"os"
	"syscall"
)

// syncData syncs f's data, and its size (a log's writes change none of
// its other metadata that matters); or, for a directory, the names
// created in it.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
