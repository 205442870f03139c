package store

import (
	"errors"
	"testing"
)

func TestSideData(t *testing.T) {
	kv := NewMemKV()
	open := func() *Store {
		s, err := Open(kv, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if err := s.PutSide("emb:a", map[string][]byte{"ns\x00x": []byte("1"), "ns\x00y": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSide("emb:b", map[string][]byte{"ns\x00x": []byte("other space")}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSide("emb:a", map[string][]byte{"ns\x00y": nil}); err != nil {
		t.Fatal(err)
	}
	fp, err := s.Fingerprint("ns")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	kv = kv.Restart()
	s = open()
	defer s.Close()
	got := map[string]string{}
	if err := s.ScanSide("emb:a", func(k string, v []byte) error { got[k] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["ns\x00x"] != "1" {
		t.Fatalf("space emb:a after restart: %q", got)
	}
	if fp2, _ := s.Fingerprint("ns"); fp2 != fp || len(s.Namespaces()) != 0 {
		t.Fatal("side data changed the replicated state")
	}
	stop := errors.New("stop")
	if err := s.ScanSide("emb:b", func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error: %v", err)
	}
	for _, bad := range []string{"", "a\x00b"} {
		if s.PutSide(bad, map[string][]byte{"k": {1}}) == nil || s.ScanSide(bad, func(string, []byte) error { return nil }) == nil {
			t.Errorf("space %q accepted", bad)
		}
	}
}
