package memory

import (
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// Indexing: what a write or a peer's delta changed reaches the Kinds, the
// feature observers and the search index (in commit order: putMemory).

// reindex brings the index and the features up to date with what a write
// or a peer's delta changed.
func (s *Service) reindex(changes []store.Change) { s.reindexKeeping(changes, nil) }

// keptView is the view the index made of one memory a write changed (ns,
// id), kept for the writer's answer (Save) instead of making it again:
// ok when the index put exactly that write's record, viewed as features
// view it now.
type keptView struct {
	ns, id string
	m      Memory
	ok     bool
}

// reindexKeeping is reindex, keeping keep's view (keep may be nil).
func (s *Service) reindexKeeping(changes []store.Change, keep *keptView) {
	for _, c := range changes {
		if c.Record == nil {
			s.unindex(c.ID)
			for _, f := range s.feat.forgetters {
				f.Forget(c.Namespace, c.ID)
			}
			continue
		}
		s.index(c.Namespace, c.ID, c.Record, c.Seq, keep)
	}
	for _, o := range s.feat.changed {
		o.Changed(changes)
	}
}

// index offers a record to the Kinds, and indexes it if it is a memory.
// seq is the store's commit Seq of the write that left rec (putMemory);
// keep (may be nil) receives the view putMemory made, if it names id.
func (s *Service) index(ns, id string, rec *crdt.Record, seq uint64, keep *keptView) {
	if rec.Empty() {
		return
	}
	if k := s.feat.owner(rec); k != nil {
		k.Admit(ns, id, rec)
		return
	}
	if schema.Str(rec, schema.FieldKind) != "" {
		return // a kind no attached feature owns: not a memory either
	}
	for _, o := range s.feat.memories {
		o.ObserveMemory(ns, id, rec)
	}
	if s.holdBack(ns, id) {
		return
	}
	s.putMemory(ns, id, rec, seq, keep)
}

// putMemory puts the effective view of the memory in the search index.
// Two writes of one memory commit in order but may reach the index in the
// other order (each writer reindexes after its commit, concurrently). So
// under ixMu a record that a later committed write changed again is read
// again: every put is of what was committed when it was made, and the put
// that follows a memory's last write is of what that write left. The store
// says which records a later write touched (WrittenAfter) without a read:
// a read waits for the commit in flight, under ixMu.
//
// The view and the tokenizing of its text (search.Index.Prepare) are made
// before ixMu, which every writer takes in turn, and kept when, under it,
// the record is still the one committed and no feature changed what views
// depend on meanwhile (viewEpoch, bumped by Core.Reindex before it re-puts
// a memory): otherwise they are made again under ixMu, as before.
func (s *Service) putMemory(ns, id string, rec *crdt.Record, seq uint64, keep *keptView) {
	epoch := s.viewEpoch.Load()
	m, fl := s.view(ns, id, rec)
	var p *search.Prepared
	if !fl.Retracted {
		p = s.ix.Prepare(toDoc(m))
	}
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	fresh := s.viewEpoch.Load() == epoch
	if later, known := s.st.WrittenAfter(ns, id, seq); later || !known {
		cur, err := s.st.RecordView(ns, id) // only viewed and indexed
		switch {
		case err != nil:
			s.log.Warn("memory unreadable", "namespace", ns, "id", id, "err", err)
		case cur.Empty():
			s.ix.Delete(id) // retracted since
			return
		default:
			rec, fresh = cur, false
		}
	}
	if !fresh {
		m, fl = s.view(ns, id, rec)
		p = nil
	}
	if fl.Retracted {
		s.ix.Delete(id)
		return
	}
	if p == nil {
		s.ix.Put(toDoc(m))
		return
	}
	s.ix.PutPrepared(p)
	if keep != nil && keep.ns == ns && keep.id == id {
		keep.m, keep.ok = m, true
	}
}

// unindex takes a retracted memory out of the search index.
func (s *Service) unindex(id string) {
	s.ixMu.Lock()
	s.ix.Delete(id)
	s.ixMu.Unlock()
}

// view is the effective view of the memory stored as id in ns: every read
// goes through it. Each registered Viewer (surgery) may change the memory
// and set its flags.
func (s *Service) view(ns, id string, rec *crdt.Record) (Memory, viewFlags) {
	m := toMemory(ns, id, rec)
	var fl viewFlags
	for _, v := range s.feat.viewers {
		m = v.View(ns, id, m, &fl)
	}
	return m, fl
}
