package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The Service refuses a NUL in any text field it stores, naming the field.
func TestNULIsRefused(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	for field, req := range map[string]SaveRequest{
		"content":   {Content: "a\x00b"},
		"title":     {Content: "x", Title: "t\x00"},
		"tags":      {Content: "x", Tags: []string{"ok", "t\x00"}},
		"topic_key": {Content: "x", TopicKey: "k\x00"},
		"project":   {Content: "x", Project: "p\x00"},
	} {
		_, err := s.Save(ctx, c, req)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), field+" contains a NUL") {
			t.Errorf("%s: %v", field, err)
		}
	}
	m := mustSave(t, s, c, SaveRequest{Content: "clean"})
	if _, err := s.Update(ctx, c, m.ID, UpdateRequest{Summary: ptr("s\x00")}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "summary") {
		t.Errorf("update summary: %v", err)
	}
	if _, err := s.StartSession(ctx, c, SessionStart{ID: "s\x00"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("session id: %v", err)
	}
	if st, _ := s.Stats(ctx, c, ""); st.Memories != 1 || st.Sessions != 0 {
		t.Fatalf("refused writes stored something: %+v", st)
	}
}
