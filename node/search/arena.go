package search

import (
	"hash/maphash"
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
// reachable. Ids of dead slots stay until compaction.
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

// slotOf is the slot of document id. byID holds no pointers (a string
// key per document made 100k pointers for the collector to follow, ~2.5
// ms of CPU per collection of a 100k index, a third of the index's
// share): it is keyed by a hash of the id, which the slot's own id
// confirms; an id whose hash another id holds is kept in clash instead.
func (ix *Index) slotOf(id string) (uint32, bool) {
	if s, ok := ix.byID[maphash.String(ix.seed, id)]; ok && ix.ids.str(ix.slots[s].id) == id {
		return s, true
	}
	s, ok := ix.clash[id]
	return s, ok
}

// setSlot makes s the slot of id; ix.slots[s] must already hold id.
func (ix *Index) setSlot(id string, s uint32) {
	if _, ok := ix.clash[id]; ok {
		ix.clash[id] = s
		return
	}
	h := maphash.String(ix.seed, id)
	if cur, ok := ix.byID[h]; ok && ix.ids.str(ix.slots[cur].id) != id {
		if ix.clash == nil {
			ix.clash = map[string]uint32{}
		}
		ix.clash[strings.Clone(id)] = s
		return
	}
	ix.byID[h] = s
}

// dropSlot forgets the slot of id, which it must have.
func (ix *Index) dropSlot(id string) {
	if _, ok := ix.clash[id]; ok {
		delete(ix.clash, id)
		return
	}
	delete(ix.byID, maphash.String(ix.seed, id))
}
