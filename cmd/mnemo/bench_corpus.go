package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
)

// textGen makes English-like text: a 20k pseudo-word vocabulary drawn with
// a Zipf law, mixed with stopwords and technical words (as the corpus of
// node/memory's benchmarks).
type textGen struct {
	rng        *rand.Rand
	zipf, tagZ *rand.Zipf
	vocab      []string
	tags       []string
	sb         strings.Builder
}

var (
	genStop = strings.Fields("the of and to in is that for it with as on was this by")
	genTech = strings.Fields("database migration postgres api latency cache deploy kubernetes timeout retry schema index " +
		"query auth token config error build test release server client request response memory cpu disk network " +
		"golang python rust docker service endpoint logging metrics tracing queue worker batch stream replica")
)

func newTextGen(seed uint64) *textGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &textGen{rng: rng}
	cons := strings.Fields("b c d f g h k l m n p r s t v w z st tr pl ch sh")
	vow := strings.Fields("a e i o u ai ea ou")
	seen := map[string]bool{}
	for len(g.vocab) < 20000 {
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
			g.vocab = append(g.vocab, s)
		}
	}
	for i := range 300 {
		g.tags = append(g.tags, fmt.Sprintf("%s-%d", g.vocab[i*7], i))
	}
	g.zipf = rand.NewZipf(rng, 1.07, 2, uint64(len(g.vocab)-1))
	g.tagZ = rand.NewZipf(rng, 1.2, 1, uint64(len(g.tags)-1))
	return g
}

func (g *textGen) text(n int) string {
	g.sb.Reset()
	for i := range n {
		if i > 0 {
			if g.rng.IntN(12) == 0 {
				g.sb.WriteString(". ")
			} else {
				g.sb.WriteByte(' ')
			}
		}
		switch r := g.rng.IntN(100); {
		case r < 30:
			g.sb.WriteString(genStop[g.rng.IntN(len(genStop))])
		case r < 35:
			g.sb.WriteString(genTech[g.rng.IntN(len(genTech))])
		default:
			g.sb.WriteString(g.vocab[g.zipf.Uint64()])
		}
	}
	return g.sb.String()
}

// query is a search of 2–3 words drawn as document words are, stopwords
// drawn again (the tokenizer drops them): common words as often as agents
// use them, nothing picked for the index's sake.
func (g *textGen) query() string {
	ws := make([]string, 2+g.rng.IntN(2))
	for i := range ws {
		if g.rng.IntN(100) < 5 {
			ws[i] = genTech[g.rng.IntN(len(genTech))]
		} else {
			ws[i] = g.vocab[g.zipf.Uint64()]
		}
	}
	return strings.Join(ws, " ")
}

// crockford is the mnemo id alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// memory is the i-th memory of a generated export, created at: a title
// of 4–8 words, content of 40–120, 2–4 tags, a project and a session, as
// an agent's notes look.
func (g *textGen) memory(i int, at time.Time) memapi.Memory {
	types := []string{"decision", "fact", "fact", "observation", "observation", "note", "preference", "task", "procedure"}
	scopes := []string{"project", "project", "user", "session", "global"}
	id := make([]byte, 26)
	for j := range id {
		id[j] = crockford[g.rng.IntN(len(crockford))]
	}
	m := memapi.Memory{
		ID:         string(id),
		Type:       types[g.rng.IntN(len(types))],
		Title:      g.text(4 + g.rng.IntN(5)),
		Content:    g.text(40 + g.rng.IntN(81)),
		Project:    fmt.Sprintf("proj-%d", g.rng.IntN(20)),
		Scope:      scopes[g.rng.IntN(len(scopes))],
		SessionID:  fmt.Sprintf("sess-%d", i/50),
		Importance: 0.5,
		Confidence: 0.8,
		CreatedAt:  at,
		UpdatedAt:  at,
	}
	for range 2 + g.rng.IntN(3) {
		m.Tags = append(m.Tags, g.tags[g.tagZ.Uint64()])
	}
	return m
}

// queryGen is a generator over g's vocabulary with a random stream of its
// own, so queries do not shift with the documents drawn.
func (g *textGen) queryGen(seed uint64) *textGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	q := *g
	q.rng = rng
	q.zipf = rand.NewZipf(rng, 1.07, 2, uint64(len(g.vocab)-1))
	q.tagZ = rand.NewZipf(rng, 1.2, 1, uint64(len(g.tags)-1))
	q.sb = strings.Builder{}
	return &q
}
