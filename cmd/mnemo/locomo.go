package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// maxLocomoFileBytes bounds one file read by the recall bench: the public
// release's largest file, all ten conversations, is under 3 MB.
const maxLocomoFileBytes = 64 << 20

// locomoConversation is one LoCoMo conversation: two speakers talking over
// dated sessions, and questions annotated with the turns that answer them.
type locomoConversation struct {
	Name      string // the file's base name, with the sample id if it has one
	Sessions  []locomoSession
	Questions []locomoQuestion
}

type locomoSession struct {
	N     int
	Date  string // as written, e.g. "1:56 pm on 8 May, 2023"
	Turns []locomoTurn
}

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

type locomoQuestion struct {
	Question string
	Evidence []string // dia_ids, as annotated
	Category int
}

// Turns counts the conversation's turns.
func (c *locomoConversation) Turns() int {
	n := 0
	for _, s := range c.Sessions {
		n += len(s.Turns)
	}
	return n
}

// loadLocomoDir reads every *.json file of dir, in name order. A file holds
// one conversation object or an array of them; a conversation is either the
// release's sample form ({"sample_id", "conversation": {...}, "qa": [...]})
// or that form flattened (speakers, sessions and "qa" at the top).
func loadLocomoDir(dir string) ([]locomoConversation, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json files in %s", dir)
	}
	slices.Sort(files)
	var out []locomoConversation
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		if st.Size() > maxLocomoFileBytes {
			return nil, fmt.Errorf("%s: %d bytes, more than %d", f, st.Size(), maxLocomoFileBytes)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		convs, err := parseLocomo(strings.TrimSuffix(filepath.Base(f), ".json"), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, convs...)
	}
	return out, nil
}

// parseLocomo decodes one file's conversations; name names them.
func parseLocomo(name string, data []byte) ([]locomoConversation, error) {
	var raws []map[string]json.RawMessage
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, err
		}
	} else {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(t, &one); err != nil {
			return nil, err
		}
		raws = append(raws, one)
	}
	var out []locomoConversation
	for i, raw := range raws {
		c, err := parseLocomoSample(raw)
		if err != nil {
			return nil, fmt.Errorf("conversation %d: %w", i, err)
		}
		c.Name = name
		if len(raws) > 1 {
			c.Name = fmt.Sprintf("%s-%d", name, i)
		}
		if id := c.sampleID(raw); id != "" {
			c.Name = name + "-" + id
		}
		out = append(out, c)
	}
	return out, nil
}

func (c *locomoConversation) sampleID(raw map[string]json.RawMessage) string {
	var id string
	if json.Unmarshal(raw["sample_id"], &id) != nil {
		return ""
	}
	return id
}

func parseLocomoSample(raw map[string]json.RawMessage) (locomoConversation, error) {
	var c locomoConversation
	conv := raw
	if inner, ok := raw["conversation"]; ok {
		if err := json.Unmarshal(inner, &conv); err != nil {
			return c, fmt.Errorf("conversation: %w", err)
		}
	}
	for k, v := range conv {
		num, ok := strings.CutPrefix(k, "session_")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			continue // session_N_date_time, read below
		}
		s := locomoSession{N: n}
		if err := json.Unmarshal(v, &s.Turns); err != nil {
			return c, fmt.Errorf("%s: %w", k, err)
		}
		if d, ok := conv[k+"_date_time"]; ok {
			if err := json.Unmarshal(d, &s.Date); err != nil {
				return c, fmt.Errorf("%s_date_time: %w", k, err)
			}
		}
		c.Sessions = append(c.Sessions, s)
	}
	if len(c.Sessions) == 0 {
		return c, fmt.Errorf("no session_N lists: not a LoCoMo conversation")
	}
	slices.SortFunc(c.Sessions, func(a, b locomoSession) int { return a.N - b.N })
	var qa []struct {
		Question string            `json:"question"`
		Evidence []json.RawMessage `json:"evidence"`
		Category int               `json:"category"`
	}
	if q, ok := raw["qa"]; ok {
		if err := json.Unmarshal(q, &qa); err != nil {
			return c, fmt.Errorf("qa: %w", err)
		}
	}
	for _, q := range qa {
		lq := locomoQuestion{Question: q.Question, Category: q.Category}
		for _, e := range q.Evidence {
			var s string
			if json.Unmarshal(e, &s) != nil {
				continue
			}
			// A few annotations hold two ids in one string ("D8:6; D9:17").
			for _, id := range strings.Split(s, ";") {
				if id = strings.TrimSpace(id); id != "" {
					lq.Evidence = append(lq.Evidence, id)
				}
			}
		}
		c.Questions = append(c.Questions, lq)
	}
	return c, nil
}

// locomoMemory is how the bench saves a turn, as an agent keeping a
// conversation's memory would: who said it and when in the title, what was
// said (and a description of any photo shared) as the content.
func locomoMemory(s locomoSession, t locomoTurn) (title, content string) {
	title = t.Speaker
	if s.Date != "" {
		title += " (" + s.Date + ")"
	}
	content = t.Text
	if t.BlipCaption != "" {
		content += " [shares a photo of " + t.BlipCaption + "]"
	}
	return title, content
}
