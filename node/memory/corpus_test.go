package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// corpus generates seeded, English-like save requests for benchmarks: words
// from a 20k pseudo-word vocabulary drawn with a Zipf law, mixed with
// stopwords and common technical words (the idea of node/search's
// corpus_test.go, rebuilt here because test helpers are not shared).
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	tagZ  *rand.Zipf
	vocab []string
	tags  []string
	sb    strings.Builder
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
	}
	corpusNS    = []string{"", "", "", "subagent/build", "subagent/research", "subagent/review"}
	corpusTypes = []string{"decision", "fact", "fact", "observation", "observation", "note", "preference", "task", "procedure", "summary"}
	corpusScope = []string{"project", "project", "user", "session", "global"}
)

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{rng: rng}
	cons := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "st", "tr", "pl", "ch", "sh"}
	vow := []string{"a", "e", "i", "o", "u", "ai", "ea", "ou"}
	seen := map[string]bool{}
	for len(c.vocab) < 20000 {
		var w strings.Builder
		for range 1 + rng.IntN(3) {
			w.WriteString(cons[rng.IntN(len(cons))])
			w.WriteString(vow[rng.IntN(len(vow))])
		}
		if rng.IntN(3) == 0 {
			w.WriteString(cons[rng.IntN(len(cons))])
		}
		if s := w.String(); len(s) >= 3 && !seen[s] {
			seen[s] = true
			c.vocab = append(c.vocab, s)
		}
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

// next is the next save: title 4–8 words, content 40–120 words, 2–4 tags.
func (c *corpus) next() SaveRequest {
	c.n++
	r := SaveRequest{
		Namespace: corpusNS[c.rng.IntN(len(corpusNS))],
		Type:      corpusTypes[c.rng.IntN(len(corpusTypes))],
		Title:     c.text(4 + c.rng.IntN(5)),
		Content:   c.text(40 + c.rng.IntN(81)),
		Project:   fmt.Sprintf("proj-%d", c.rng.IntN(20)),
		Scope:     corpusScope[c.rng.IntN(len(corpusScope))],
		SessionID: fmt.Sprintf("sess-%d", c.n/50),
	}
	if c.rng.IntN(20) == 0 {
		r.TopicKey = fmt.Sprintf("topic/%d", c.rng.IntN(1000))
	}
	for range 2 + c.rng.IntN(3) {
		r.Tags = append(r.Tags, c.tags[c.tagZ.Uint64()])
	}
	return r
}

// query is 1–3 terms drawn like document words, technical words
// over-represented, never stopwords.
func (c *corpus) query() string {
	ws := make([]string, 1+c.rng.IntN(3))
	for i := range ws {
		if c.rng.IntN(10) < 3 {
			ws[i] = corpusTech[c.rng.IntN(len(corpusTech))]
		} else {
			ws[i] = c.vocab[c.zipf.Uint64()]
		}
	}
	return strings.Join(ws, " ")
}
