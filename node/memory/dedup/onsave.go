package dedup

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/similarity"
	"github.com/mnemohq/mnemo/node/store"
)

// Bounds of merging on save.
const (
	DefaultSaveQueue = 1024  // memories waiting for their check
	maxSaveQueue     = 65536 // the largest OnSave.QueueSize accepted
	// ConsensusMark is the provenance entry a merge on save adds with its
	// confidence boost: a survivor that carries it has had its boost, so
	// later or concurrent merges into it do not add another.
	ConsensusMark = "consensus:+0.2"
)

// OnSaveConfig configures merging on save (see the package doc).
type OnSaveConfig struct {
	// Disabled turns merging on save off; default false (on). The
	// simulator turns it off: its nodes must not run goroutines of their
	// own.
	Disabled bool `json:"disabled,omitempty"`
	// QueueSize bounds the memories waiting for their check; default
	// DefaultSaveQueue (1024), at most 65536. A save that finds the
	// queue full is not checked (SaveStats.Dropped counts it).
	QueueSize int `json:"queue_size,omitempty"`
}

func (o *OnSaveConfig) validate() error {
	if o.QueueSize == 0 {
		o.QueueSize = DefaultSaveQueue
	}
	if o.QueueSize < 0 || o.QueueSize > maxSaveQueue {
		return invalid("duplicates.on_save.queue_size must be in 1..%d, got %d", maxSaveQueue, o.QueueSize)
	}
	return nil
}

// SaveStats counts what merging on save did since the feature opened.
type SaveStats struct {
	Checked uint64 // memories checked for duplicates
	Merged  uint64 // memories soft-deleted into a survivor
	Dropped uint64 // memories not checked: the queue was full, or closed
	NoWrite uint64 // merges skipped: no local principal may write the namespace
}

// saveQueue is the bounded queue of memories to check, drained by one
// goroutine. busy counts the keys queued or being checked, so Flush can
// wait for quiet.
type saveQueue struct {
	keys chan memory.MemoryKey
	done chan struct{} // closed when the worker has returned

	mu      sync.Mutex
	idle    sync.Cond // signalled when busy drops to 0
	queued  map[memory.MemoryKey]bool
	busy    int
	started bool
	closed  bool
	stats   SaveStats
	// missed is set when a change was not queued (the queue was full),
	// so the band tables may lack it: the worker rebuilds them once the
	// queue has drained.
	missed bool

	// tables are the band tables of the shared namespaces (bands.go), nil
	// until the worker first builds them; the worker's alone. Not kept
	// when the threshold is too low for bands to find every pair.
	tables map[string]*bandTable

	// beforeCheck, when set (tests), runs on the worker before each check.
	beforeCheck func(memory.MemoryKey)
}

func newSaveQueue(size int) *saveQueue {
	q := &saveQueue{keys: make(chan memory.MemoryKey, size), done: make(chan struct{}), queued: map[memory.MemoryKey]bool{}}
	q.idle.L = &q.mu
	return q
}

// AfterSent queues the shared-namespace memories a write or a peer's delta
// changed (memory.SentObserver), deleted and retracted ones and those an
// approved edit changes included (Core.Touched), so the band tables
// follow them: called once the change itself has gone to replication, it
// never blocks, so the save is acknowledged without waiting for its check.
func (d *Dedup) AfterSent(changes []store.Change) {
	if d.save == nil || !slices.ContainsFunc(changes, func(c store.Change) bool { return sharedNS(c.Namespace) }) {
		return // an agent's own namespace: nothing to do, not even Touched's map
	}
	for _, k := range d.core.Touched(changes) {
		if sharedNS(k.Namespace) {
			d.save.enqueue(k)
		}
	}
}

// sharedNS reports whether merging on save applies in ns: team and project
// namespaces only, never an agent's (nor an inbox, which is an agent's).
func sharedNS(ns string) bool {
	a, err := namespace.Parse(ns)
	return err == nil && (a.Kind == namespace.KindTeam || a.Kind == namespace.KindProject)
}

func (q *saveQueue) enqueue(k memory.MemoryKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.queued[k]:
	case q.closed:
		q.stats.Dropped++
	default:
		select {
		case q.keys <- k:
			q.queued[k] = true
			q.busy++
		default:
			q.stats.Dropped++
			q.missed = true
		}
	}
}

// Opened starts the worker (memory.Opener): the store is indexed, so
// checks see every memory.
func (d *Dedup) Opened() {
	if d.save == nil {
		return
	}
	// With hybrid search on, a memory is checked again once its vector is
	// in: it is computed after the save, off the write path.
	if sem := semantic.Of(d.core.Service()); sem != nil && sem.Config().Enabled {
		d.sem = sem
		sem.OnStored(func(keys []memory.MemoryKey) {
			for _, k := range keys {
				if sharedNS(k.Namespace) {
					d.save.enqueue(k)
				}
			}
		})
	}
	d.save.mu.Lock()
	d.save.started = true
	d.save.mu.Unlock()
	go d.drain()
}

func (d *Dedup) drain() {
	q := d.save
	defer close(q.done)
	for k := range q.keys {
		q.mu.Lock()
		delete(q.queued, k) // a change from now on queues k again
		hook := q.beforeCheck
		rebuild := bandsFind(d.cfg.Threshold) && (q.tables == nil || q.missed && len(q.keys) == 0)
		q.missed = q.missed && !rebuild
		q.mu.Unlock()
		if rebuild {
			d.buildTables()
		}
		if hook != nil {
			hook(k)
		}
		checked := d.checkSaved(k)
		q.mu.Lock()
		if checked {
			q.stats.Checked++
		}
		if q.busy--; q.busy == 0 {
			q.idle.Broadcast()
		}
		q.mu.Unlock()
	}
}

// Close stops merging on save (memory.Closer, before the store closes):
// later changes are dropped, the memories already queued are checked, and
// Close returns once the worker has. Safe to call more than once.
func (d *Dedup) Close() {
	q := d.save
	if q == nil {
		return
	}
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.keys)
	}
	done := q.done
	if !q.started { // no worker ever ran: nothing to wait for
		done = make(chan struct{})
		close(done)
	}
	q.mu.Unlock()
	<-done
}

// Flush waits until no memory is queued or being checked, including the
// ones the checks' own merges queue. Tests and benchmarks call it to
// observe merges; nothing on a save's path does.
func (d *Dedup) Flush() {
	q := d.save
	if q == nil {
		return
	}
	q.mu.Lock()
	for q.busy > 0 && q.started {
		q.idle.Wait()
	}
	q.mu.Unlock()
}

// SaveStats reports what merging on save has done so far (zero when off).
func (d *Dedup) SaveStats() SaveStats {
	if d.save == nil {
		return SaveStats{}
	}
	d.save.mu.Lock()
	defer d.save.mu.Unlock()
	return d.save.stats
}

func (d *Dedup) count(f func(*SaveStats)) {
	d.save.mu.Lock()
	f(&d.save.stats)
	d.save.mu.Unlock()
}

// eligible reports whether m takes part in merging on save.
func eligible(m memory.Memory) bool {
	return m.DeletedAt == nil && m.Author != "" && m.Type != memory.TypeReference && strings.TrimSpace(text(m)) != ""
}

// buildTables builds the band table of every shared namespace from the
// store, replacing what the worker had: at the worker's start, and after
// changes were missed.
func (d *Dedup) buildTables() {
	tables := map[string]*bandTable{}
	st := d.core.Service().Store()
	for _, ns := range st.Namespaces() {
		if !sharedNS(ns) {
			continue
		}
		t := newBandTable()
		err := st.Scan(ns, func(ns, id string, rec *crdt.Record) error {
			if m, ok := d.candidate(ns, id, rec); ok {
				sig := similarity.MinHash(text(m))
				t.put(id, keysOf(&sig))
			}
			return nil
		})
		if err != nil {
			d.core.Logger().Warn("dedup: reading a shared namespace for merging on save", "namespace", ns, "err", err)
		}
		tables[ns] = t
	}
	d.save.tables = tables
}

// table is ns's band table, made empty if there was none.
func (d *Dedup) table(ns string) *bandTable {
	t := d.save.tables[ns]
	if t == nil {
		t = newBandTable()
		d.save.tables[ns] = t
	}
	return t
}

// checkSaved merges the memory k with its near-duplicates by other
// authors in its namespace (see the package doc): the oldest of the group
// survives. It reports whether k was compared with the namespace (false
// when it is gone, deleted or not eligible: then it only leaves the band
// table).
func (d *Dedup) checkSaved(k memory.MemoryKey) bool {
	rec, err := d.core.Record(k.Namespace, k.ID)
	if err != nil {
		return false
	}
	var tab *bandTable
	if d.save.tables != nil {
		tab = d.table(k.Namespace)
	}
	m, ok := d.candidate(k.Namespace, k.ID, rec)
	if !ok {
		if tab != nil {
			tab.remove(k.ID)
		}
		return false
	}
	sig := similarity.MinHash(text(m))
	var dups []memory.Memory
	consider := func(o memory.Memory, osig similarity.Signature) {
		if o.ID != m.ID && o.Author != m.Author && eligible(o) && similarity.Similarity(sig, osig) >= d.cfg.Threshold {
			dups = append(dups, o)
		}
	}
	if tab != nil {
		keys := keysOf(&sig)
		for _, id := range tab.candidates(&keys, m.ID) {
			rec, err := d.core.Record(k.Namespace, id)
			if err != nil {
				continue
			}
			o, ok := d.candidate(k.Namespace, id, rec)
			if !ok {
				tab.remove(id)
				continue
			}
			consider(o, similarity.MinHash(text(o)))
		}
		tab.put(m.ID, keys)
	} else {
		for _, o := range d.core.List(search.Filter{Namespaces: []string{k.Namespace}}, true, maxCandidates) {
			consider(o, d.signature(o))
		}
	}
	if d.sem != nil {
		dups = d.similarVectors(m, dups)
	}
	if len(dups) == 0 {
		return true
	}
	oldest := slices.MinFunc(dups, older)
	if older(m, oldest) < 0 {
		d.mergeSaved(m, dups) // every dup's author differs from m's
		return true
	}
	d.mergeSaved(oldest, []memory.Memory{m})
	return true
}

// similarVectors adds to dups the memories of m's namespace by other
// authors whose vectors (the semantic feature's) are at least the
// embeddings threshold from m's, nearest first, up to maxVectorDups.
func (d *Dedup) similarVectors(m memory.Memory, dups []memory.Memory) []memory.Memory {
	th := cmp.Or(d.cfg.Embeddings.Threshold, DefaultEmbeddingsThreshold)
	for _, r := range d.sem.Similar(m.Namespace, m.ID, th, maxVectorDups) {
		if slices.ContainsFunc(dups, func(o memory.Memory) bool { return o.ID == r.Key }) {
			continue
		}
		rec, err := d.core.Record(m.Namespace, r.Key)
		if err != nil {
			continue
		}
		if o, ok := d.candidate(m.Namespace, r.Key, rec); ok && o.Author != m.Author {
			dups = append(dups, o)
		}
	}
	return dups
}

// candidate is the memory ns/id through the effective view of its stored
// record rec; false if it takes no part in merging on save (gone,
// retracted, another kind's record, or not eligible).
func (d *Dedup) candidate(ns, id string, rec *crdt.Record) (memory.Memory, bool) {
	if rec.Empty() || schema.Str(rec, schema.FieldKind) != "" {
		return memory.Memory{}, false
	}
	m, fl := d.core.View(ns, id, rec)
	return m, !fl.Retracted && eligible(m)
}

// older orders memories by (created_at, id): the survivor is the same on
// every node whatever order the memories arrived in.
func older(a, b memory.Memory) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
}

// writer is a principal this node hosts that may write ns, naming whom the
// merge writes for; false when none may (peers would refuse the write).
func (d *Dedup) writer(ns namespace.Address, mems ...memory.Memory) bool {
	cands := []namespace.Address{d.core.Service().Owner()}
	for _, m := range mems {
		if p, err := namespace.ParsePrincipal(m.Author); err == nil {
			cands = append(cands, p)
		}
	}
	for _, p := range cands {
		if d.core.IsLocal(p) && d.core.Check(p, ns, acl.Write) == nil {
			return true
		}
	}
	return false
}

// mergeSaved soft-deletes losers into surv in their namespace. Every
// value it writes is what any node would write for the same records
// (sets gain the same elements, the lineage is the survivor), so merges
// of the same duplicates on several nodes join to one state; the boost
// is added once per survivor (ConsensusMark).
func (d *Dedup) mergeSaved(surv memory.Memory, losers []memory.Memory) {
	ns, err := namespace.Parse(surv.Namespace)
	if err != nil {
		return
	}
	if !d.writer(ns, append([]memory.Memory{surv}, losers...)...) {
		d.count(func(s *SaveStats) { s.NoWrite++ })
		return
	}
	prov := []string{"author:" + surv.Author}
	boost := false
	for _, l := range losers {
		prov = append(prov, l.Provenance...)
		prov = append(prov, "author:"+l.Author, "source:"+l.ID)
		boost = boost || independent(surv, l)
	}
	boost = boost && !slices.Contains(surv.Provenance, ConsensusMark)
	if boost {
		prov = append(prov, ConsensusMark)
	}
	slices.Sort(prov)
	prov = slices.Compact(prov)
	var conf *float64
	if boost {
		c := boosted(surv.Confidence)
		conf = &c
	}
	ids := make([]string, len(losers))
	for i, l := range losers {
		ids[i] = l.ID // in surv's namespace: checkSaved compares within one
	}
	err = d.writeMerge(surv, prov, conf, ids)
	if err != nil {
		d.core.Logger().Warn("dedup: merge on save failed", "namespace", surv.Namespace, "survivor", surv.ID, "err", err)
		return
	}
	d.count(func(s *SaveStats) { s.Merged += uint64(len(losers)) })
}
