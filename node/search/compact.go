package search

// maybeCompact compacts once dead slots exceed a quarter of all slots, or
// the tag and channel lists no slot refers to exceed half of them, so the
// cost is amortised over at least as many retirements as it touches.
func (ix *Index) maybeCompact() {
	if ix.ndead > 0 && ix.ndead*4 > len(ix.slots) || ix.listWaste > 1024 && ix.listWaste*2 > len(ix.lists) {
		ix.compact()
	}
}

// Compact drops dead slots and their postings now, renumbers the live
// slots, and forgets catalog values and terms no live document uses.
func (ix *Index) Compact() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.compact()
}

func (ix *Index) compact() {
	const gone = ^uint32(0)
	remap := make([]uint32, len(ix.slots))
	slots := make([]slot, 0, ix.live)
	dls := make([]uint32, 0, ix.live)
	f := newFields()
	var ids idArena
	lists := make([]uint32, 0, len(ix.lists)-ix.listWaste)
	var keep []uint32 // new slots that are their id's (byID's)
	for s := range ix.slots {
		if ix.isDead(uint32(s)) {
			remap[s] = gone
			continue
		}
		old := &ix.slots[s]
		sl := *old
		sl.ns = f.ns.reintern(&ix.f.ns, old.ns)
		sl.typ = f.typ.reintern(&ix.f.typ, old.typ)
		sl.project = f.project.reintern(&ix.f.project, old.project)
		sl.scope = f.scope.reintern(&ix.f.scope, old.scope)
		sl.subjType = f.subjType.reintern(&ix.f.subjType, old.subjType)
		sl.subjID = f.subjID.reintern(&ix.f.subjID, old.subjID)
		sl.session = f.session.reintern(&ix.f.session, old.session)
		sl.channel = f.channel.reintern(&ix.f.channel, old.channel)
		sl.topic = f.topic.reintern(&ix.f.topic, old.topic)
		sl.tags.at = uint32(len(lists))
		for _, t := range old.tags.of(ix.lists) {
			lists = append(lists, f.tag.reintern(&ix.f.tag, t))
		}
		sl.blocked.at = uint32(len(lists))
		for _, ch := range old.blocked.of(ix.lists) {
			lists = append(lists, f.channel.reintern(&ix.f.channel, ch))
		}
		id := ix.ids.str(old.id)
		sl.id = ids.add(id)
		if b, ok := ix.slotOf(id); ok && b == uint32(s) {
			keep = append(keep, uint32(len(slots)))
		}
		remap[s] = uint32(len(slots))
		slots = append(slots, sl)
		dls = append(dls, ix.dls[s])
	}

	dict := make(map[string]uint32, len(ix.dict))
	terms := make([]postings, 0, len(ix.terms))
	var buf []byte
	for term, t := range ix.dict {
		p := newPostings()
		buf = buf[:0]
		it := postingIter{buf: ix.terms[t].buf}
		for it.next() {
			if ns := remap[it.slot]; ns != gone {
				p.buf = buf
				p.add(ns, it.tf2, dls[ns])
				buf = p.buf
			}
		}
		if p.n == 0 {
			continue
		}
		p.buf = append([]byte(nil), buf...) // exact capacity
		dict[term] = uint32(len(terms))
		terms = append(terms, p)
	}

	for i, s := range ix.order {
		ix.order[i] = remap[s]
	}
	topics := make(map[uint64][]uint32, len(ix.topics))
	for _, s := range ix.order {
		if sl := &slots[s]; sl.topic != 0 {
			k := topicMapKey(sl.ns, sl.topic)
			topics[k] = append(topics[k], s)
		}
	}

	ix.slots = slots
	ix.ids, ix.lists, ix.listWaste = ids, lists, 0
	ix.byID, ix.clash = make(map[uint64]uint32, len(keep)), nil
	for _, s := range keep {
		ix.setSlot(ix.ids.str(slots[s].id), s)
	}
	ix.dls = dls
	ix.dead = make([]uint64, (len(slots)+63)/64)
	ix.flagged = make([]uint64, len(ix.dead))
	ix.emptyNS = false
	for s := range slots {
		ix.setFlagged(uint32(s))
		ix.emptyNS = ix.emptyNS || slots[s].ns == 0
	}
	ix.ndead = 0
	ix.f = f
	ix.dict = dict
	ix.terms = terms
	ix.topics = topics
}
