package mcptools_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
)

// Arguments that are not text are a tool error naming the argument, and
// nothing is stored. Invalid UTF-8 goes over a raw stdio transport: the
// SDK's client would re-encode it as U+FFFD before sending.
func TestArgumentsMustBeText(t *testing.T) {
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := openService(t, clk)
	owner := memapi.Caller{Principal: svc.Owner()}

	// A NUL, through the SDK's client (it travels as \u0000).
	cs := connect(t, mcpservice.New(svc, owner))
	res := call(t, cs, "mem_save", map[string]any{"content": "ok", "topic_key": "a\x00b"}, true)
	mustContain(t, "NUL", textOf(res), "mem_save", "topic_key contains a NUL")

	// Invalid UTF-8, as raw bytes on stdio.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcptools.NewServer(mcpservice.New(svc, owner), mcptools.Options{})
	done := make(chan error, 1)
	go func() { done <- srv.Run(t.Context(), &mcp.IOTransport{Reader: inR, Writer: outW}) }()
	lines := bufio.NewScanner(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(id int) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("server wrote %q: %v", lines.Text(), err)
			}
			if got, ok := m["id"].(float64); ok && int(got) == id {
				return m
			}
		}
		t.Fatalf("no reply to %d: %v", id, lines.Err())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	reply(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"mem_save\",\"arguments\":{\"content\":\"fine\",\"tags\":[\"ok\",\"caf\xe9\"]}}}")
	m := reply(2)
	b, _ := json.Marshal(m["result"])
	var r mcp.CallToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	if !r.IsError {
		t.Fatalf("invalid UTF-8 in tags was accepted: %s", b)
	}
	mustContain(t, "invalid UTF-8", textOf(&r), "mem_save", "tags[1] is not valid UTF-8")

	inW.Close()
	<-done
	outW.Close()
	if st, err := svc.Stats(t.Context(), owner, ""); err != nil || st.Memories != 0 {
		t.Fatalf("refused calls stored something: %+v %v", st, err)
	}
	if strings.Contains(string(b), "\ufffd") {
		t.Fatalf("the error carries a replaced byte: %s", b)
	}
}
