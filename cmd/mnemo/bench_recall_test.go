package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A made-up conversation in LoCoMo's flattened form: two sessions, and
// questions of which two count (one answerable lexically, one not), one
// is adversarial (category 5) and one has no evidence.
const recallFixtureFlat = `{
  "speaker_a": "Ada", "speaker_b": "Bo",
  "session_1_date_time": "9:00 am on 1 March, 2024",
  "session_1": [
    {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel last week."},
    {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I am still restoring the old sailboat."}
  ],
  "session_2_date_time": "6:30 pm on 9 March, 2024",
  "session_2": [
    {"speaker": "Ada", "dia_id": "D2:1", "text": "Pixel loves the beach.", "blip_caption": "a dog running on sand"},
    {"speaker": "Bo", "dia_id": "D2:2", "text": "The boat finally floats."}
  ],
  "qa": [
    {"question": "What is the name of the greyhound Ada adopted?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
    {"question": "Which vessel was being repaired?", "answer": "a sailboat", "evidence": ["D1:2; D2:2"], "category": 1},
    {"question": "What did Bo adopt?", "answer": "", "evidence": ["D1:1"], "category": 5},
    {"question": "Unannotated?", "answer": "", "evidence": [], "category": 4}
  ]
}`

// The same shape as the release's sample form, two in one array file.
const recallFixtureSamples = `[
  {"sample_id": "s1", "conversation": {"speaker_a": "Cy", "speaker_b": "Di",
    "session_1_date_time": "noon on 2 April, 2024",
    "session_1": [{"speaker": "Cy", "dia_id": "D1:1", "text": "My sister plays the cello in an orchestra."}]},
   "qa": [{"question": "Which instrument does Cy's sister play?", "answer": "cello", "evidence": ["D1:1"], "category": 4}]},
  {"sample_id": "s2", "conversation": {"speaker_a": "Ed", "speaker_b": "Flo",
    "session_1_date_time": "noon on 3 April, 2024",
    "session_1": [{"speaker": "Flo", "dia_id": "D1:1", "text": "We hiked up Ben Nevis in the fog."}]},
   "qa": [{"question": "Which mountain did Flo hike?", "answer": "Ben Nevis", "evidence": ["D1:1"], "category": 4}]}
]`

func TestBenchRecall(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.json": recallFixtureFlat, "b.json": recallFixtureSamples, "notes.txt": "not json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "recall", "--locomo", dir, "--data", t.TempDir()}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	// conversation turns questions hit@1 hit@10 recall@5 recall@10 recall@20 MRR@10
	for name, want := range map[string]string{
		"a":    "4 2 0.500 0.500 0.500 0.500 0.500 0.500", // the vessel question shares no word with the turns
		"b-s1": "1 1 1.000 1.000 1.000 1.000 1.000 1.000",
		"b-s2": "1 1 1.000 1.000 1.000 1.000 1.000 1.000",
		"all":  "6 4 0.750 0.750 0.750 0.750 0.750 0.750",
	} {
		if got := strings.Join(rows[name][1:], " "); got != want {
			t.Errorf("row %s: got %q, want %q\n%s", name, got, want, out.String())
		}
	}
	if !strings.Contains(out.String(), "search latency over 4 queries") {
		t.Errorf("no latency line:\n%s", out.String())
	}
	// With feedback the first hit stays first and nothing else is found.
	out.Reset()
	if code := run(context.Background(), []string{"bench", "recall", "--feedback", "--locomo", dir}, nil, &out, &errb); code != exitOK {
		t.Fatalf("--feedback: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "with feedback") || !strings.Contains(out.String(), "all                 6         4   0.750   0.750") {
		t.Errorf("--feedback:\n%s", out.String())
	}

	for _, bad := range [][]string{
		{"bench", "recall"},
		{"bench", "recall", "--locomo", t.TempDir()},
	} {
		errb.Reset()
		if code := run(context.Background(), bad, nil, &out, &errb); code == exitOK {
			t.Errorf("%q: exit 0, want a failure", bad)
		}
	}
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "x.json"), []byte(`{"qa": []}`), 0o644)
	errb.Reset()
	if code := run(context.Background(), []string{"bench", "recall", "--locomo", broken}, nil, &out, &errb); code != exitError || !strings.Contains(errb.String(), "not a LoCoMo conversation") {
		t.Errorf("a file without sessions: exit %d, stderr %q", code, errb.String())
	}
}

// TestRecallScore checks the figures on a question with three evidence
// turns found at ranks 2 and 7, a duplicate among the results.
func TestRecallScore(t *testing.T) {
	var s recallScore
	s.add([]string{"D1:1", "D1:2", "D1:3", "D1:1"}, []string{"x", "D1:2", "x", "x", "x", "D1:2", "D1:3"})
	s.add([]string{"D9:9"}, []string{"x"})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, want := range []struct{ hit, recall, rr float64 }{
		{0, 0, 0},            // k=1
		{0.5, 1.0 / 6, 0.25}, // k=5: one of three evidence turns, first at rank 2
		{0.5, 2.0 / 6, 0.25},
		{0.5, 2.0 / 6, 0.25},
	} {
		if got := (struct{ hit, recall, rr float64 }{s.mean(s.hit[i]), s.mean(s.recall[i]), s.mean(s.rr[i])}); !near(got.hit, want.hit) || !near(got.recall, want.recall) || !near(got.rr, want.rr) {
			t.Errorf("k=%d: got %+v, want %+v", recallKs[i], got, want)
		}
	}
}
