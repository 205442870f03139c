package badgerkv

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mnemohq/mnemo/node/store"
)

// acquireLock takes the exclusive lock of dir (mnemo.lock) and writes this
// process's pid in it, so that a second process fails naming the holder.
// The lock is the kernel's (flock): it goes with the process, however it
// dies.
func acquireLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, "mnemo.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("badgerkv: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is held by process %s (another mnemo node); stop it or attach to it", store.ErrLocked, dir, pid)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// releaseLock empties and unlocks the lock file, if k holds one.
func (k *KV) releaseLock() {
	if k.lock != nil {
		_ = k.lock.Truncate(0)
		_ = syscall.Flock(int(k.lock.Fd()), syscall.LOCK_UN)
		_ = k.lock.Close()
		k.lock = nil
	}
}
