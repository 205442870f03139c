package badgerkv

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// madvise advice values (linux/mman.h).
const (
	madvCold    = 20 // Linux 5.4
	madvPageout = 21 // Linux 5.4
)

// ReleaseFilePages advises the kernel to reclaim the pages of this KV's
// table and value-log files mapped into the process, and returns how many
// bytes of mappings it advised. Badger maps its files; the index rebuild at
// start reads every record once, which would otherwise leave the whole data
// set resident (counted in VmRSS as RssFile) until memory pressure. The
// advice (MADV_PAGEOUT, or MADV_COLD where that is refused) never changes
// what the mapped memory holds: a page needed again is read back from its
// file, so a race with Badger unmapping a file is harmless.
func (k *KV) ReleaseFilePages() int64 {
	if k.dir == "" {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	prefix := []byte(k.dir + string(filepath.Separator))
	var advised int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 {
			continue
		}
		path := fields[5]
		if !bytes.HasPrefix(path, prefix) || !(bytes.HasSuffix(path, []byte(".sst")) || bytes.HasSuffix(path, []byte(".vlog"))) {
			continue
		}
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		n := uintptr(end - start)
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), n, madvPageout); e != 0 {
			if _, _, e = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), n, madvCold); e != 0 {
				continue
			}
		}
		advised += int64(n)
	}
	return advised
}
