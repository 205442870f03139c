package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// SettingsFile is the node's optional configuration file in the data
// directory:
//
//	{
//	  "principal_rules": [
//	    {"mode": "prefix", "match": "agent:bob:", "principal": "agent://bob"},
//	    {"mode": "regex", "match": "^agent:([a-z0-9-]+):", "principal": "agent://$1"}
//	  ],
//	  "auto_promote": {"enabled": true, "namespace": "team://backend",
//	                   "types": ["correction", "decision", "preference"], "min_confidence": 0.9},
//	  "approvals": {"team://backend": ["retract", "amend"], "*": ["retract"]},
//	  "hybrid_search": {"enabled": true, "base_url": "http://127.0.0.1:11434/v1", "model": "nomic-embed-text"}
//	}
//
// hybrid_search: see Settings.HybridSearch.
//
// principal_rules map an X-Mnemo-Session key to a principal (see
// namespace.Resolver; no match gives the owner agent). auto_promote is
// memory.AutoPromote. approvals names, per namespace (a root covers its
// paths; "*" is every namespace; the most specific key decides), the
// memory-edit ops that stay pending until an admin approves them
// (surgery.Approvals); default none. A missing file means no rules and no
// auto-promotion; a file that does not parse, has unknown fields or
// invalid rules stops the node from starting, with an error naming it.
const SettingsFile = "config.json"

// Settings is the content of SettingsFile.
type Settings struct {
	PrincipalRules []namespace.Rule   `json:"principal_rules,omitempty"`
	AutoPromote    memory.AutoPromote `json:"auto_promote,omitzero"`
	// Duplicates configures duplicate detection: {"threshold": 0.8, "embeddings":
	// {"enabled": true, "base_url": "http://127.0.0.1:11434/v1", "model": "…",
	// "api_key_env": "VAR", "threshold": 0.9}, "on_save": {"disabled": false,
	// "queue_size": 1024}}; embeddings off (MinHash only) and merging on save
	// on by default (dedup.Config).
	Duplicates dedup.Config      `json:"duplicates,omitzero"`
	Approvals  surgery.Approvals `json:"approvals,omitempty"`
	// HybridSearch fuses vector search into search: {"enabled": true,
	// "base_url": "http://127.0.0.1:11434/v1", "model": "nomic-embed-text",
	// "api_key_env": "VAR", "query_prefix": "…", "document_prefix": "…",
	// "rrf_k": 60, "queue": 4096, "batch": 32}; off (lexical only) by
	// default (semantic.Config). The --embeddings-* flags override it.
	HybridSearch semantic.Config `json:"hybrid_search,omitzero"`
}

// loadSettings reads dir's settings file and builds the principal resolver
// and the dedup feature (which checks its settings and builds its
// embeddings client once, here).
func loadSettings(dir string, owner namespace.Address) (Settings, *namespace.Resolver, *dedup.Dedup, error) {
	var st Settings
	path := filepath.Join(dir, SettingsFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, nil, nil, fmt.Errorf("node: read %s: %w", path, err)
	default:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return st, nil, nil, fmt.Errorf("node: %s: %w", path, err)
		}
		if dec.More() {
			return st, nil, nil, fmt.Errorf("node: %s: trailing data after the JSON object", path)
		}
	}
	if err := st.AutoPromote.Validate(); err != nil {
		return st, nil, nil, fmt.Errorf("node: %s: %w", path, err)
	}
	dd, err := dedup.New(st.Duplicates)
	if err != nil {
		return st, nil, nil, fmt.Errorf("node: %s: %w", path, err)
	}
	st.Duplicates = dd.Config() // as in effect: defaults filled
	if err := st.Approvals.Validate(); err != nil {
		return st, nil, nil, fmt.Errorf("node: %s: %w", path, err)
	}
	r, err := namespace.NewResolver(st.PrincipalRules, owner)
	if err != nil {
		return st, nil, nil, fmt.Errorf("node: %s: principal_rules: %w", path, err)
	}
	return st, r, dd, nil
}
