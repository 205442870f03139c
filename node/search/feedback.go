package search

import (
	"cmp"
	"slices"
	"strings"
)

// Pseudo-relevance feedback (RM3): the best few documents of a first
// search are taken as relevant, the terms they share most become
// expansion terms, and a second pass ranks the same matches by the query
// and those terms together. Parameters were chosen on the LoCoMo dev split
// (doc.go).
const (
	// FeedbackDocs is how many first-pass hits Expand should be given.
	FeedbackDocs = 3
	// feedbackTerms is how many expansion terms Expand returns at most.
	feedbackTerms = 10
	// feedbackQueryWeight is the share of the original query in the
	// expanded one (RM3's λ); the expansion terms share the rest.
	feedbackQueryWeight = 0.5
	// feedbackMaxDF: expansion terms in a larger share of the documents
	// are not used (1: all were, at 4.5× the search time of 0.2 for the
	// same recall; 0.1 and below lost recall).
	feedbackMaxDF = 0.2
)

// Term is one weighted term of an expanded query: an index term, as
// Tokenize returns them.
type Term struct {
	Text   string
	Weight float64
}

// FeedbackDoc is a first-pass hit given to Expand: its score and its
// indexed text (title, content and tags, in any order).
type FeedbackDoc struct {
	Score float64
	Text  string
}

// Expand returns the expansion terms for docs, the best hits of a first
// search, by the relevance model: a term weighs the sum over docs of its
// share of the document's terms times the document's share of the
// scores. The feedbackTerms heaviest are kept, their weights scaled to sum
// to 1 − feedbackQueryWeight; ties go to the lexically smaller term, so
// the result depends only on docs. Query terms may be among them: their
// weight then adds to the query's. Nil if no doc has a positive score and
// a term.
func Expand(docs []FeedbackDoc) []Term {
	var total float64
	for _, d := range docs {
		if d.Score > 0 {
			total += d.Score
		}
	}
	if total == 0 {
		return nil
	}
	rel := make(map[string]float64)
	for _, d := range docs {
		if d.Score <= 0 {
			continue
		}
		toks := Tokenize(d.Text)
		for _, t := range toks {
			rel[t] += d.Score / total / float64(len(toks))
		}
	}
	out := make([]Term, 0, len(rel))
	for t, w := range rel {
		out = append(out, Term{Text: t, Weight: w})
	}
	slices.SortFunc(out, func(a, b Term) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return strings.Compare(a.Text, b.Text)
	})
	out = out[:min(len(out), feedbackTerms)]
	var sum float64
	for _, t := range out {
		sum += t.Weight
	}
	for i := range out {
		out[i].Weight *= (1 - feedbackQueryWeight) / sum
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
