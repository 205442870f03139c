package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// corpus generates seeded, English-like memories: words from a ~20k
// pseudo-word vocabulary drawn with a Zipf distribution, interleaved with
// stopwords and common technical words, plus a realistic catalog spread.
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	tagZ  *rand.Zipf
	vocab []string
	tags  []string
	sb    strings.Builder
	clock int64
	n     int
}

var (
	corpusStop = []string{"the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "on", "was", "this", "by"}
	corpusTech = []string{
		"database", "migration", "postgres", "api", "latency", "cache", "deploy", "kubernetes",
		"timeout", "retry", "schema", "index", "query", "auth", "token", "config", "error",
		"build", "test", "release", "server", "client", "request", "response", "memory",
		"cpu", "disk", "network", "golang", "python", "rust", "docker", "service", "endpoint",
		"logging", "metrics", "tracing", "queue", "worker", "batch", "stream", "replica",
		"cluster", "node", "shard", "backup", "restore", "encryption", "tls", "certificate",
	}
	corpusNS    = []string{"agent://alice", "agent://bob", "agent://bob/research", "agent://carol", "team://infra", "team://infra/oncall", "team://web", "org://acme"}
	corpusTypes = []string{"decision", "fact", "fact", "observation", "observation", "note", "preference", "task", "procedure", "summary"}
)

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{rng: rng, clock: 1_700_000_000_000_000_000}
	cons := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "st", "tr", "pl", "ch", "sh"}
	vow := []string{"a", "e", "i", "o", "u", "ai", "ea", "ou"}
	seen := make(map[string]bool)
	for len(c.vocab) < 20000 {
		var w strings.Builder
		for range 1 + rng.IntN(3) {
			w.WriteString(cons[rng.IntN(len(cons))])
			w.WriteString(vow[rng.IntN(len(vow))])
		}
		if rng.IntN(3) == 0 {
			w.WriteString(cons[rng.IntN(len(cons))])
		}
		s := w.String()
		if len(s) < 3 || seen[s] {
			continue
		}
		seen[s] = true
		c.vocab = append(c.vocab, s)
	}
	for i := range 300 {
		c.tags = append(c.tags, fmt.Sprintf("%s-%d", c.vocab[i*7], i))
	}
	c.zipf = rand.NewZipf(rng, 1.07, 2, uint64(len(c.vocab)-1))
	c.tagZ = rand.NewZipf(rng, 1.2, 1, uint64(len(c.tags)-1))
	return c
}

func (c *corpus) word() string {
	switch r := c.rng.IntN(100); {
	case r < 30:
		return corpusStop[c.rng.IntN(len(corpusStop))]
	case r < 35:
		return corpusTech[c.rng.IntN(len(corpusTech))]
	default:
		return c.vocab[c.zipf.Uint64()]
	}
}

func (c *corpus) text(n int) string {
	c.sb.Reset()
	for i := range n {
		if i > 0 {
			if c.rng.IntN(12) == 0 {
				c.sb.WriteString(". ")
			} else {
				c.sb.WriteByte(' ')
			}
		}
		c.sb.WriteString(c.word())
	}
	return c.sb.String()
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// next returns the next memory. Creation times mostly ascend; one in 20
// arrives out of order, as replicated memories do.
func (c *corpus) next() Doc {
	c.n++
	c.clock += int64(c.rng.IntN(2_000_000_000))
	created := c.clock
	if c.rng.IntN(20) == 0 {
		created -= int64(c.rng.IntN(3600)) * 1e9
	}
	var id [26]byte
	ms := uint64(created / 1e6)
	for i := 9; i >= 0; i-- {
		id[i] = crockford[ms&31]
		ms >>= 5
	}
	for i := 10; i < 26; i++ {
		id[i] = crockford[c.rng.IntN(32)]
	}
	d := Doc{
		ID:          string(id[:]),
		Namespace:   corpusNS[c.rng.IntN(len(corpusNS))],
		Type:        corpusTypes[c.rng.IntN(len(corpusTypes))],
		Project:     fmt.Sprintf("proj-%d", c.rng.IntN(20)),
		Scope:       []string{"private", "team", "org"}[c.rng.IntN(3)],
		SubjectType: []string{"", "user", "repo", "service"}[c.rng.IntN(4)],
		SubjectID:   fmt.Sprintf("subj-%d", c.rng.IntN(500)),
		SessionID:   fmt.Sprintf("sess-%d", c.n/50),
		Channel:     []string{"cli", "mcp", "api"}[c.rng.IntN(3)],
		Title:       c.text(4 + c.rng.IntN(5)),
		Content:     c.text(40 + c.rng.IntN(81)),
		CreatedAt:   created,
		UpdatedAt:   created,
		Hidden:      c.rng.IntN(100) == 0,
		Deleted:     c.rng.IntN(50) == 0,
	}
	if c.rng.IntN(10) == 0 {
		d.TopicKey = fmt.Sprintf("topic/%d", c.rng.IntN(1000))
	}
	for range 2 + c.rng.IntN(3) {
		d.Tags = append(d.Tags, c.tags[c.tagZ.Uint64()])
	}
	return d
}

// query returns a 1–3-term query: words drawn like document words, with
// technical words over-represented, stopwords never.
func (c *corpus) query() string {
	n := 1 + c.rng.IntN(3)
	ws := make([]string, n)
	for i := range ws {
		if c.rng.IntN(10) < 3 {
			ws[i] = corpusTech[c.rng.IntN(len(corpusTech))]
		} else {
			ws[i] = c.vocab[c.zipf.Uint64()]
		}
	}
	return strings.Join(ws, " ")
}

func buildIndex(n int, seed uint64) (*Index, *corpus) {
	c := newCorpus(seed)
	ix := New()
	for range n {
		ix.Put(c.next())
	}
	return ix, c
}
