package memory

import (
	"strings"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// registerFeatures plugs the core's own record kinds in: grants first
// (what a change means depends on who may do what), then sessions. The
// feature packages (Config.Features) come after these, in their order.
func (s *Service) registerFeatures() {
	for _, f := range []any{accessKind{s}, sessionKind{s}} {
		s.feat.register(f)
	}
}

// accessKind: signed grants and revocations (access.go).
type accessKind struct{ s *Service }

func (k accessKind) Owns(rec *crdt.Record) bool            { return schema.IsACL(rec) }
func (k accessKind) Admit(ns, id string, rec *crdt.Record) { k.s.admitACL(ns, id, rec) }
func (k accessKind) CheckRemote(ns string, delta *crdt.Map) error {
	return k.s.checkRemoteACL(ns, delta)
}
func (k accessKind) Changed([]store.Change) { k.s.refreshPolicy() }
func (k accessKind) Loaded()                { k.s.refreshPolicy() }

// sessionKind: session records (sessions.go).
type sessionKind struct{ s *Service }

func (k sessionKind) Owns(rec *crdt.Record) bool { return schema.IsSession(rec) }

func (k sessionKind) Admit(ns, id string, rec *crdt.Record) {
	sess := schema.ToSession(ns, id, rec)
	k.s.sessMu.Lock()
	k.s.sessions[ns+"\x00"+sess.ID] = sess
	k.s.sessMu.Unlock()
}

func (k sessionKind) Forget(ns, id string) {
	k.s.sessMu.Lock()
	delete(k.s.sessions, ns+"\x00"+strings.TrimPrefix(id, schema.SessionPrefix))
	k.s.sessMu.Unlock()
}

var (
	_ Kind          = accessKind{}
	_ RemoteChecker = accessKind{}
	_ Forgetter     = sessionKind{}
)
