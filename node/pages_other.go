//go:build !linux

package node

// residentStat has nothing to read outside Linux: the budget never
// triggers, and Badger's pages are handed back once a minute (a no-op
// there too: badgerkv/pages_other.go).
type residentStat struct{}

func openResidentStat() *residentStat    { return nil }
func (r *residentStat) fileBytes() int64 { return -1 }
func (r *residentStat) close()           {}

// releaseExecutable has no pages to hand back outside Linux.
func releaseExecutable() int64 { return 0 }
