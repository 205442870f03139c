package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// exportFormat is the "format" of a mnemo export.
const exportFormat = "mnemo-export"

// importChunk bounds the memories one import transaction writes.
const importChunk = 250

// Transfer is the export and import feature: build it with New, attach it
// to one Service (memory.Config.Features), then find it with Of. Safe for
// concurrent use once attached.
type Transfer struct {
	core *memory.Core
}

// New returns the feature, to attach to a Service.
func New() *Transfer { return &Transfer{} }

// Of returns the transfer feature attached to svc, or nil.
func Of(svc *memory.Service) *Transfer { return memory.FeatureOf[*Transfer](svc) }

// Attach keeps the core (memory.Feature). Transfer registers no hook.
func (t *Transfer) Attach(c *memory.Core) { t.core = c }

var _ memory.Feature = (*Transfer)(nil)

// Export returns every memory (soft-deleted ones included, so an import
// reproduces them) and session the caller can read under namespaceArg
// ("": every namespace it may read). Errors wrap memapi.ErrInvalid or
// acl.ErrDenied.
func (t *Transfer) Export(ctx context.Context, c memapi.Caller, namespaceArg string) (memapi.Export, error) {
	sf, err := t.core.ReadScope(c, namespaceArg)
	if err != nil {
		return memapi.Export{}, err
	}
	sf.IncludeDeleted, sf.IncludeHidden = true, true
	out := memapi.Export{Format: exportFormat, Version: 1, ExportedAt: t.core.Wall().UTC(), Memories: t.core.List(sf, false, 0)}
	out.Sessions = t.core.ReadableSessions(sf)
	if out.Sessions == nil {
		out.Sessions = []memapi.Session{}
	}
	return out, nil
}

// Import is ImportWith into namespaceArg, the importer as the author.
func (t *Transfer) Import(ctx context.Context, c memapi.Caller, namespaceArg string, data []byte) (memapi.ImportResult, error) {
	return t.ImportWith(ctx, c, data, memapi.ImportOptions{Namespace: namespaceArg})
}

// ImportWith reads a mnemo export or an engram export into the caller's
// namespace (or opts.Namespace): all of it, or nothing if any item is
// invalid. Items already present (same id) are skipped, so importing twice
// is harmless. The package doc says what a file may claim; each refusal
// wraps memapi.ErrInvalid naming the record, a refusal by the policy (or
// PreserveProvenance asked by anyone but the node's owner) acl.ErrDenied.
func (t *Transfer) ImportWith(ctx context.Context, c memapi.Caller, data []byte, opts memapi.ImportOptions) (memapi.ImportResult, error) {
	owner := t.core.Service().Owner()
	if opts.PreserveProvenance && c.Principal != owner {
		return memapi.ImportResult{}, fmt.Errorf("%w: only the node's owner (%s) may import with the file's authors and provenance; %s imports as the author",
			acl.ErrDenied, owner, c.Principal)
	}
	if err := memapi.CheckJSONText(data); err != nil {
		return memapi.ImportResult{}, err
	}
	var probe struct {
		Format       string          `json:"format"`
		Observations json.RawMessage `json:"observations"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return memapi.ImportResult{}, invalid("import body is not JSON: %v", err)
	}
	ns, err := t.core.ResolveWrite(c, opts.Namespace)
	if err != nil {
		return memapi.ImportResult{}, err
	}
	r := reader{t: t, ns: ns, future: timeBound{now: t.core.Wall(), skew: t.core.MaxSkew()}}
	res := memapi.ImportResult{}
	switch {
	case probe.Format == exportFormat:
		res.Format = exportFormat
		var ex memapi.Export
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&ex); err != nil {
			return memapi.ImportResult{}, invalid("mnemo export: %v", err)
		}
		err = r.mnemo(ex, opts.PreserveProvenance)
	case probe.Observations != nil:
		res.Format = "engram"
		var ex engramExport
		if err := json.Unmarshal(data, &ex); err != nil {
			return memapi.ImportResult{}, invalid("engram export: %v", err)
		}
		err = r.engram(ex)
	default:
		err = invalid(`import body is neither a mnemo export ("format":"mnemo-export") nor an engram export (with "observations")`)
	}
	if err != nil {
		return memapi.ImportResult{}, err
	}
	// Everything was validated above; the writes go in transactions of at
	// most importChunk items (Badger bounds a transaction's size). Only an
	// I/O failure can stop an import midway, and running it again completes
	// it: items already present are skipped.
	for start := 0; start == 0 || start < len(r.items); start += importChunk {
		chunk := r.items[start:min(start+importChunk, len(r.items))]
		var sessions []importedSession
		if start+importChunk >= len(r.items) {
			sessions = r.sessions // with the last chunk
		}
		if err := t.importChunk(c, ns, chunk, sessions, &res); err != nil {
			return memapi.ImportResult{}, err
		}
	}
	return res, nil
}

// present reports whether ns already holds id, or retracted it.
func present(tx *store.Tx, ns namespace.Address, id string) (bool, error) {
	cur, err := tx.Record(ns.String(), id)
	if err != nil {
		return false, err
	}
	gone, err := tx.Retracted(ns.String(), id)
	if err != nil {
		return false, err
	}
	return !cur.Empty() || gone, nil
}

func (t *Transfer) importChunk(c memapi.Caller, ns namespace.Address, items []importItem, sessions []importedSession, res *memapi.ImportResult) error {
	return t.core.Write(func(tx *store.Tx) error {
		for _, it := range items {
			there, err := present(tx, ns, it.opts.ID)
			if err != nil {
				return err
			}
			if there {
				res.Skipped++
				continue
			}
			it.opts.NoUpsert = true // an import restores items; it never merges them by topic key
			if _, err := t.core.SaveTx(tx, c, ns, it.req, it.opts); err != nil {
				return err
			}
			if it.req.Type == "prompt" && res.Format == "engram" {
				res.Prompts++
			} else {
				res.Memories++
			}
		}
		// Sessions go in the same transaction, so a failed import leaves
		// nothing behind and a repeated one skips them like memories.
		for _, is := range sessions {
			there, err := present(tx, ns, schema.SessionPrefix+is.start.ID)
			if err != nil {
				return err
			}
			if there {
				res.Skipped++
				continue
			}
			if is.ended == nil && is.summary != "" {
				now := t.core.Wall().UTC()
				is.ended = &now // a summary marks the session as over
			}
			if _, err := t.core.CreateSessionTx(tx, c, ns, is.start, is.started, is.ended, is.summary); err != nil {
				return err
			}
			res.Sessions++
		}
		return nil
	})
}
