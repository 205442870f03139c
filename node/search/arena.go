package search

import (
	"strings"
	"unsafe"
)

// The catalog holds no pointers, so that the collector does not scan it:
// with a tags slice and an id string in each slot, marking the slots of
// 100k documents took ~4 ms of CPU per collection, about a third of the
// index's share, and a node under its soft memory limit collects every
// ~150 searches at 100k memories. A slot refers to its id and its tag and
// channel lists by position instead, in the arenas below; compaction
// rebuilds them with the slots.

// idArena holds document ids in chunks that are never moved or grown, so
// that the strings idOf makes stay valid for as long as the arena is
// reachable (byID's keys are such strings: one marked object per chunk,
// not one per id). Ids of dead slots stay until compaction.
type idArena struct {
	chunks [][]byte
}

// idChunk is the size of a chunk; a longer id gets a chunk of its own.
const idChunk = 64 << 10

// idRef is where an id is in an idArena.
type idRef struct{ chunk, off, n uint32 }

// add copies id into the arena.
func (a *idArena) add(id string) idRef {
	if id == "" {
		return idRef{}
	}
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < len(id) {
		a.chunks = append(a.chunks, make([]byte, 0, max(idChunk, len(id))))
		last++
	}
	c := a.chunks[last]
	r := idRef{chunk: uint32(last), off: uint32(len(c)), n: uint32(len(id))}
	a.chunks[last] = append(c, id...)
	return r
}

// str is the id at r, sharing the arena's memory.
func (a *idArena) str(r idRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&a.chunks[r.chunk][r.off], int(r.n))
}

// out is the id at r in memory of its own, for callers: a string of the
// arena's would keep its whole chunk alive after compaction dropped it.
func (a *idArena) out(r idRef) string { return strings.Clone(a.str(r)) }

// listRef is where a slot's tag or channel ids are in Index.lists.
type listRef struct {
	at uint32
	n  uint16
}

// of is the list at r in lists.
func (r listRef) of(lists []uint32) []uint32 { return lists[r.at : r.at+uint32(r.n)] }
