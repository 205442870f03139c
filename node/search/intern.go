package search

// interner maps the few distinct values of a catalog field to small ids.
// Id 0 is always the empty string.
type interner struct {
	ids  map[string]uint32
	strs []string
}

func newInterner() interner {
	return interner{ids: map[string]uint32{"": 0}, strs: []string{""}}
}

func (in *interner) intern(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	id := uint32(len(in.strs))
	in.ids[s] = id
	in.strs = append(in.strs, s)
	return id
}

func (in *interner) lookup(s string) (uint32, bool) {
	id, ok := in.ids[s]
	return id, ok
}

func (in *interner) str(id uint32) string { return in.strs[id] }

// reintern moves value id of old into in, for compaction.
func (in *interner) reintern(old *interner, id uint32) uint32 {
	return in.intern(old.strs[id])
}
