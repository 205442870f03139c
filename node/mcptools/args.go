package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// idList is compact_ids: engram clients send a string holding a JSON array,
// schema-following clients send an array; both are accepted.
type idList []string

const idListHint = `compact_ids must be an array of memory ids (strings) or a string holding one, e.g. ["01J…","01J…"]`

func (l *idList) UnmarshalJSON(b []byte) error {
	var ids []string
	if err := json.Unmarshal(b, &ids); err == nil {
		*l = ids
		if *l == nil && string(b) != "null" {
			*l = idList{}
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(idListHint)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		*l = idList{}
		return nil
	}
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return fmt.Errorf("%s; got %q", idListHint, shorten(s, 80))
	}
	if ids == nil {
		ids = []string{}
	}
	*l = ids
	return nil
}

// compactInputSchema is compactSchema, built once. The SDK's SchemaCache
// keys hand-made schemas by pointer: a new pointer per server (one server
// per HTTP session) added an entry, some 30 KiB, for every session ever
// opened.
var compactInputSchema = sync.OnceValue(compactSchema)

// compactSchema is compactArgs' generated schema with compact_ids allowed
// to be a string as well as an array.
func compactSchema() *jsonschema.Schema {
	s, err := jsonschema.ForType(reflect.TypeFor[compactArgs](), &jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[idList](): {Types: []string{"array", "string"}, Items: &jsonschema.Schema{Type: "string"}},
		},
	})
	if err != nil {
		panic(fmt.Sprintf("mcptools: compact schema: %v", err)) // a programming error, caught by every test
	}
	return s
}

// toolError turns a backend error into the message the model sees: what
// went wrong and what to do about it. The SDK reports it as a tool result
// with IsError set.
func toolError(tool string, err error) error {
	var hint string
	switch {
	case errors.Is(err, memapi.ErrNotFound):
		hint = "check the id: ids are strings returned by mem_save, mem_search, mem_context and mem_timeline"
	case errors.Is(err, acl.ErrDenied):
		hint = "omit namespace to use your own, use a relative sub-agent path, or a namespace you were granted"
	case errors.Is(err, namespace.ErrInvalid):
		hint = `namespace is a relative path like "subagent/task-1" or a full address like agent://name/path`
	case errors.Is(err, memapi.ErrTooLarge):
		hint = "shorten the content or split it into several memories"
	case errors.Is(err, memapi.ErrConflict):
		hint = "read the memory again (mem_get_observation) and retry with its current state"
	case errors.Is(err, memapi.ErrInvalid):
		hint = "fix the arguments and call again"
	}
	if hint == "" {
		return fmt.Errorf("%s failed: %w", tool, err)
	}
	return fmt.Errorf("%s: %w (%s)", tool, err, hint)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
