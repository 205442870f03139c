package vector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Defaults and bounds of Config.
const (
	DefaultM              = 16
	DefaultEfConstruction = 128
	DefaultEfSearch       = 64
	// DefaultExactBelow is the live count under which Search scans every
	// vector instead of walking the graph: exact, and as fast at that size.
	DefaultExactBelow = 512

	MaxDim            = 8192
	minM, maxM        = 4, 64
	maxEf             = 4096
	maxLevel          = 16
	compactMinDead    = 64 // tombstones below this never trigger a compaction
	maxSearchK        = maxEf
	exactBelowCeiling = 1 << 16
)

// Errors.
var (
	// ErrInvalid wraps every refused argument: a vector of the wrong
	// dimension, of zero length or with a NaN or infinite component; an
	// empty key; a bad Config.
	ErrInvalid = errors.New("vector: invalid")
)

// Config configures an Index. Zero values mean the documented default.
type Config struct {
	// Dim is the number of components of every vector, 1..MaxDim. Required.
	Dim int
	// M is the number of links a node keeps on each upper layer (twice as
	// many on layer 0), 4..64. Default 16.
	M int
	// EfConstruction is the breadth of the search that finds a new node's
	// neighbours, M..4096. Default 128.
	EfConstruction int
	// EfSearch is the breadth of a query's search on layer 0, 1..4096; a
	// query asking for more than EfSearch results searches that broad
	// instead. Default 64.
	EfSearch int
	// ExactBelow: with fewer live vectors than this, Search compares the
	// query with every vector (exact). 0 means DefaultExactBelow; negative
	// means never (tests of the graph itself). At most 65536.
	ExactBelow int
	// Seed drives the random layer of each new node: the same seed and the
	// same sequence of calls build the same graph and answer the same.
	Seed uint64
}

func (c *Config) validate() error {
	if c.Dim < 1 || c.Dim > MaxDim {
		return fmt.Errorf("%w: Dim must be 1..%d, got %d", ErrInvalid, MaxDim, c.Dim)
	}
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.M < minM || c.M > maxM {
		return fmt.Errorf("%w: M must be %d..%d, got %d", ErrInvalid, minM, maxM, c.M)
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = DefaultEfConstruction
	}
	if c.EfConstruction < c.M || c.EfConstruction > maxEf {
		return fmt.Errorf("%w: EfConstruction must be M..%d, got %d", ErrInvalid, maxEf, c.EfConstruction)
	}
	if c.EfSearch == 0 {
		c.EfSearch = DefaultEfSearch
	}
	if c.EfSearch < 1 || c.EfSearch > maxEf {
		return fmt.Errorf("%w: EfSearch must be 1..%d, got %d", ErrInvalid, maxEf, c.EfSearch)
	}
	if c.ExactBelow == 0 {
		c.ExactBelow = DefaultExactBelow
	}
	if c.ExactBelow > exactBelowCeiling {
		return fmt.Errorf("%w: ExactBelow must be at most %d, got %d", ErrInvalid, exactBelowCeiling, c.ExactBelow)
	}
	return nil
}

// Index is an HNSW graph over unit vectors, searched by cosine
// similarity. It is safe for concurrent use: searches share a read lock;
// writers (Put, Delete, Compact) are serialised and hold the lock
// exclusively only while they change the graph — a compaction builds the
// new graph beside the old one and swaps it in.
type Index struct {
	cfg   Config
	m0    int          // links per node on layer 0
	ml    float64      // level multiplier, 1/ln(M)
	rng   *rand.Rand   // layer draws; writers only
	wmu   sync.Mutex   // serialises writers (Put, Delete, Compact)
	mu    sync.RWMutex // readers against a writer changing the graph
	vecs  []float32    // slot s at vecs[s*dim:(s+1)*dim], normalised
	keys  []string
	slot  map[string]uint32
	level []uint8
	l0    []uint32   // slot s's layer-0 links at l0[s*m0:], l0n[s] of them
	l0n   []uint8    //
	upper [][]uint32 // slot s's layers 1..level: per layer a count then M links
	dead  []uint64   // tombstone bitmap
	ndead int
	entry uint32
	empty bool // no slot yet (entry meaningless)

	scratch sync.Pool // *visitScratch

}

// Result is one answer of Search: a key and its cosine similarity to the
// query, in [-1, 1].
type Result struct {
	Key   string
	Score float32
}

// New returns an empty index, or an error wrapping ErrInvalid that names
// the bad setting.
func New(cfg Config) (*Index, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Index{
		cfg:   cfg,
		m0:    2 * cfg.M,
		ml:    1 / math.Log(float64(cfg.M)),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x6d6e656d6f)),
		slot:  map[string]uint32{},
		empty: true,
	}, nil
}

// Config is the configuration in effect, defaults filled.
func (ix *Index) Config() Config { return ix.cfg }

// Len is the number of live (not deleted) vectors.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.slot)
}

// Stats describes the graph's occupancy.
type Stats struct {
	Live, Tombstones int
	MaxLevel         int
}

// Stats reports live and tombstoned nodes and the top layer.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := Stats{Live: len(ix.slot), Tombstones: ix.ndead}
	if !ix.empty {
		st.MaxLevel = int(ix.level[ix.entry])
	}
	return st
}

// normalise copies v into a unit vector, or refuses it.
func (ix *Index) normalise(v []float32) ([]float32, error) {
	if len(v) != ix.cfg.Dim {
		return nil, fmt.Errorf("%w: vector has %d dimensions, the index %d", ErrInvalid, len(v), ix.cfg.Dim)
	}
	var sum float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: component %d is %v", ErrInvalid, i, x)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil, fmt.Errorf("%w: zero vector has no direction", ErrInvalid)
	}
	inv := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out, nil
}

// Vector returns a copy of key's vector as indexed (normalised), or false
// if the index holds none for key.
func (ix *Index) Vector(key string) ([]float32, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s, ok := ix.slot[key]
	if !ok || ix.isDead(s) {
		return nil, false
	}
	return slices.Clone(ix.vec(s)), true
}

// Put inserts v under key, replacing (tombstoning) the key's earlier
// vector. v is copied and normalised; an error wraps ErrInvalid and
// changes nothing.
func (ix *Index) Put(key string, v []float32) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	u, err := ix.normalise(v)
	if err != nil {
		return err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.Lock()
	if old, ok := ix.slot[key]; ok {
		ix.kill(old)
	}
	ix.insert(key, u)
	ix.mu.Unlock()
	ix.maybeCompact()
	return nil
}

// Delete removes key; false if it was not there. Its node stays in the
// graph as a tombstone (walked through, never returned) until the index
// compacts.
func (ix *Index) Delete(key string) bool {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.Lock()
	s, ok := ix.slot[key]
	if ok {
		ix.kill(s)
	}
	ix.mu.Unlock()
	if ok {
		ix.maybeCompact()
	}
	return ok
}

func (ix *Index) kill(s uint32) {
	delete(ix.slot, ix.keys[s])
	ix.dead[s/64] |= 1 << (s % 64)
	ix.ndead++
}

func (ix *Index) isDead(s uint32) bool { return ix.dead[s/64]&(1<<(s%64)) != 0 }

// maybeCompact rebuilds the graph from the live vectors once tombstones
// outnumber live nodes (and number at least compactMinDead): a rebuild of
// n live nodes follows at least n deletions, so it costs at most one extra
// insertion per deletion, amortised. wmu held.
func (ix *Index) maybeCompact() {
	if ix.ndead < compactMinDead || ix.ndead <= len(ix.slot) {
		return
	}
	ix.rebuild()
}

// Compact rebuilds the graph from the live vectors now, in slot order
// (so deterministically), dropping every tombstone.
func (ix *Index) Compact() {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.rebuild()
}

// rebuild builds a new graph from the live vectors and swaps it in. wmu is
// held, so nothing else changes the graph meanwhile and the build reads it
// without the read lock: searches go on over the old graph, and wait only
// for the swap.
func (ix *Index) rebuild() {
	live := len(ix.slot)
	fresh := &Index{cfg: ix.cfg, m0: ix.m0, ml: ix.ml, rng: ix.rng, empty: true,
		vecs:  make([]float32, 0, live*ix.cfg.Dim),
		keys:  make([]string, 0, live),
		slot:  make(map[string]uint32, live),
		level: make([]uint8, 0, live),
		l0:    make([]uint32, 0, live*ix.m0),
		l0n:   make([]uint8, 0, live),
		upper: make([][]uint32, 0, live),
	}
	for s := range uint32(len(ix.keys)) {
		if !ix.isDead(s) {
			fresh.insert(ix.keys[s], ix.vec(s))
		}
	}
	ix.mu.Lock()
	ix.vecs, ix.keys, ix.slot, ix.level = fresh.vecs, fresh.keys, fresh.slot, fresh.level
	ix.l0, ix.l0n, ix.upper = fresh.l0, fresh.l0n, fresh.upper
	ix.dead, ix.ndead, ix.entry, ix.empty = fresh.dead, fresh.ndead, fresh.entry, fresh.empty
	ix.mu.Unlock()
}

// randomLevel draws a node's top layer: floor(-ln(U)·mL), capped.
func (ix *Index) randomLevel() int {
	u := 1 - ix.rng.Float64() // (0, 1]
	return min(int(-math.Log(u)*ix.ml), maxLevel)
}

// insert adds the unit vector u as a new slot (wmu and mu held, or ix
// private to a rebuild).
func (ix *Index) insert(key string, u []float32) {
	s := uint32(len(ix.keys))
	lvl := ix.randomLevel()
	ix.vecs = append(ix.vecs, u...)
	ix.keys = append(ix.keys, key)
	ix.slot[key] = s
	ix.level = append(ix.level, uint8(lvl))
	ix.l0 = append(ix.l0, make([]uint32, ix.m0)...)
	ix.l0n = append(ix.l0n, 0)
	var up []uint32
	if lvl > 0 {
		up = make([]uint32, lvl*(ix.cfg.M+1))
	}
	ix.upper = append(ix.upper, up)
	if int(s/64) >= len(ix.dead) {
		ix.dead = append(ix.dead, 0)
	}
	if ix.empty {
		ix.entry, ix.empty = s, false
		return
	}
	sc := ix.getScratch()
	defer ix.scratch.Put(sc)
	ep := ix.entry
	top := int(ix.level[ep])
	epDist := ix.dist(u, ep)
	for l := top; l > lvl; l-- {
		ep, epDist = ix.greedy(u, ep, epDist, l)
	}
	for l := min(top, lvl); l >= 0; l-- {
		cands := ix.searchLayer(sc, u, ep, epDist, ix.cfg.EfConstruction, l, nil)
		maxLinks := ix.maxLinks(l)
		chosen := ix.selectNeighbours(cands, ix.cfg.M)
		ix.setLinks(s, l, chosen)
		for _, c := range chosen {
			ix.link(c.slot, s, c.dist, l, maxLinks)
		}
		ep, epDist = cands[0].slot, cands[0].dist
	}
	if lvl > top {
		ix.entry = s
	}
}

func (ix *Index) maxLinks(l int) int {
	if l == 0 {
		return ix.m0
	}
	return ix.cfg.M
}

// links returns slot s's links on layer l (a view: do not keep).
func (ix *Index) links(s uint32, l int) []uint32 {
	if l == 0 {
		base := int(s) * ix.m0
		return ix.l0[base : base+int(ix.l0n[s])]
	}
	up := ix.upper[s]
	off := (l - 1) * (ix.cfg.M + 1)
	return up[off+1 : off+1+int(up[off])]
}

func (ix *Index) setLinks(s uint32, l int, ns []scored) {
	if l == 0 {
		base := int(s) * ix.m0
		for i, n := range ns {
			ix.l0[base+i] = n.slot
		}
		ix.l0n[s] = uint8(len(ns))
		return
	}
	up := ix.upper[s]
	off := (l - 1) * (ix.cfg.M + 1)
	for i, n := range ns {
		up[off+1+i] = n.slot
	}
	up[off] = uint32(len(ns))
}

// link adds a back link from a to b on layer l; when a's list is full,
// it keeps the nearest of the old links and b. (The paper shrinks with the
// selection heuristic; measured on clustered data of dimension 384 that
// costs twice the distance computations per insertion for the same
// recall, since the new node's own links already come from the heuristic.)
func (ix *Index) link(a, b uint32, dab float32, l, maxLinks int) {
	cur := ix.links(a, l)
	if len(cur) < maxLinks {
		if l == 0 {
			ix.l0[int(a)*ix.m0+len(cur)] = b
			ix.l0n[a]++
		} else {
			off := (l - 1) * (ix.cfg.M + 1)
			ix.upper[a][off+1+len(cur)] = b
			ix.upper[a][off]++
		}
		return
	}
	av := ix.vec(a)
	cands := make([]scored, 0, len(cur)+1)
	for _, c := range cur {
		cands = append(cands, scored{ix.dist(av, c), c})
	}
	cands = append(cands, scored{dab, b})
	sortScored(cands)
	ix.setLinks(a, l, cands[:maxLinks])
}

// selectNeighbours is the paper's heuristic (Algorithm 4, without
// extending candidates): walking the candidates nearest first, keep one
// only if it is nearer to the new node than to every neighbour already
// kept, so links spread in different directions rather than crowd into
// the nearest cluster. If that keeps fewer than m, the nearest discarded
// fill up the list (so sparse regions keep their degree). cands is sorted
// nearest first.
func (ix *Index) selectNeighbours(cands []scored, m int) []scored {
	if len(cands) <= m {
		return cands
	}
	kept := make([]scored, 0, m)
	var pruned []scored
	for _, c := range cands {
		if len(kept) == m {
			break
		}
		cv := ix.vec(c.slot)
		good := true
		for _, k := range kept {
			if ix.dist(cv, k.slot) < c.dist {
				good = false
				break
			}
		}
		if good {
			kept = append(kept, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, p := range pruned {
		if len(kept) == m {
			break
		}
		kept = append(kept, p)
	}
	return kept
}

func (ix *Index) vec(s uint32) []float32 {
	d := ix.cfg.Dim
	return ix.vecs[int(s)*d : int(s+1)*d]
}

// dist is the cosine distance 1 − u·v of unit vectors.
func (ix *Index) dist(u []float32, s uint32) float32 { return 1 - dot(u, ix.vec(s)) }

// dot is written with eight accumulators, so the adds of a long vector
// overlap instead of waiting on one another, and with slices advanced in
// step, so the compiler proves every index in range (no bounds checks).
func dot(a, b []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 && len(b) >= 8 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		s4 += a[4] * b[4]
		s5 += a[5] * b[5]
		s6 += a[6] * b[6]
		s7 += a[7] * b[7]
		a, b = a[8:], b[8:]
	}
	for i := range min(len(a), len(b)) {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// greedy walks layer l from ep to a local minimum of the distance to q.
func (ix *Index) greedy(q []float32, ep uint32, d float32, l int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		for _, n := range ix.links(ep, l) {
			if dn := ix.dist(q, n); less(dn, n, d, ep) {
				ep, d, changed = n, dn, true
			}
		}
	}
	return ep, d
}
