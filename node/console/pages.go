package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/sync/replica"
)

// governancePage is GET /ui/governance: the edits waiting for approval,
// the audit log (every edit the principal may read, newest first),
// capsules and memories needing re-summary.
func (c *Console) governancePage(w http.ResponseWriter, r *http.Request, ss *session) error {
	data := map[string]any{}
	if c.surgery != nil {
		pending, err := c.surgery.Audit(r.Context(), ss.caller(), memapi.AuditQuery{Status: memapi.StatusPending})
		if err != nil {
			return err
		}
		data["Pending"] = c.editRows(ss, pending.Edits)
		all, err := c.surgery.Audit(r.Context(), ss.caller(), memapi.AuditQuery{})
		if err != nil {
			return err
		}
		slices.Reverse(all.Edits)
		data["Audit"] = all.Edits
		data["Resummary"] = all.NeedsResummary
	}
	if c.capsules != nil {
		list, err := c.capsules.List(r.Context(), ss.caller(), memapi.CapsuleQuery{})
		if err != nil {
			return err
		}
		rows := make([]capsuleRow, len(list.Capsules))
		for i, cp := range list.Capsules {
			rows[i] = capsuleRow{Capsule: cp, MayRevoke: cp.Status == memapi.CapsuleActive &&
				(cp.Author == ss.principal.String() || c.svc.MayWrite(ss.principal, cp.Namespace))}
		}
		data["Capsules"] = rows
	}
	c.render(w, http.StatusOK, "governance", ss, "Governance", data)
	return nil
}

type capsuleRow struct {
	memapi.Capsule
	MayRevoke bool
}

func (c *Console) decideEdit(approve bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, ss *session) error {
		if c.surgery == nil {
			return notFeature("memory edit")
		}
		e, err := c.surgery.Decide(r.Context(), ss.caller(), r.PathValue("id"), approve)
		if err != nil {
			return err
		}
		if r.PostForm.Get("back") == "memory" {
			return seeOther(w, r, "/ui/memories/"+e.TargetID, nil)
		}
		return seeOther(w, r, "/ui/governance", nil)
	}
}

func (c *Console) revokeCapsule(w http.ResponseWriter, r *http.Request, ss *session) error {
	if c.capsules == nil {
		return notFeature("capsule")
	}
	if _, err := c.capsules.Revoke(r.Context(), ss.caller(), r.PathValue("id")); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/governance", nil)
}

// nsRow is a namespace the principal may see, with its access list when
// the principal may read it (the API's GET /v1/acl answers the same).
type nsRow struct {
	memapi.NamespaceInfo
	ACL   *memapi.ACLView
	Admin bool
}

// namespacesPage is GET /ui/namespaces.
func (c *Console) namespacesPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	nss, err := c.svc.Namespaces(r.Context(), ss.caller())
	if err != nil {
		return err
	}
	rows := make([]nsRow, len(nss))
	for i, ns := range nss {
		rows[i] = nsRow{NamespaceInfo: ns, Admin: slices.Contains(ns.Permissions, acl.Admin.String())}
		v, err := c.svc.ACL(r.Context(), ss.caller(), ns.Namespace)
		switch {
		case err == nil:
			rows[i].ACL = &v
		case !errors.Is(err, acl.ErrDenied):
			return err
		}
	}
	c.render(w, http.StatusOK, "namespaces", ss, "Namespaces", map[string]any{"Namespaces": rows})
	return nil
}

func grantRequest(r *http.Request) memapi.GrantRequest {
	f := r.PostForm
	perms := f["permission"]
	if extra := splitList(f.Get("permissions")); len(extra) > 0 {
		perms = append(perms, extra...)
	}
	return memapi.GrantRequest{Namespace: strings.TrimSpace(f.Get("namespace")),
		Principal: strings.TrimSpace(f.Get("principal")), Permissions: perms}
}

func (c *Console) grant(w http.ResponseWriter, r *http.Request, ss *session) error {
	if _, err := c.svc.Grant(r.Context(), ss.caller(), grantRequest(r)); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/namespaces", nil)
}

func (c *Console) revoke(w http.ResponseWriter, r *http.Request, ss *session) error {
	if _, err := c.svc.Revoke(r.Context(), ss.caller(), grantRequest(r)); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/namespaces", nil)
}

// clusterPage is GET /ui/cluster. Members are shown to every session (the
// API's /v1/members answers any token: gossip carries them anyway); the
// per-peer counters and namespace digests only to the owner, as
// /v1/status: they describe every namespace the node holds.
func (c *Console) clusterPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	data := map[string]any{"Replicating": c.cfg.Cluster != nil}
	members := []cluster.Member{{NodeID: c.cfg.NodeID, Agents: []string{c.svc.Owner().String()}, State: "alive", Self: true}}
	if c.cfg.Cluster != nil {
		members = c.cfg.Cluster.Members()
	}
	data["Members"] = members
	if ss.owner {
		st := cluster.Status{NodeID: c.cfg.NodeID, Peers: []replica.PeerStats{}}
		if c.cfg.Cluster != nil {
			st = c.cfg.Cluster.Status(true)
		}
		data["Status"] = st
		data["Agreement"] = agreementRows(st.Agreement, c.cfg.Now())
	}
	c.render(w, http.StatusOK, "cluster", ss, "Cluster", data)
	return nil
}

// agreementRow is one peer's agreement on one namespace, as the cluster
// page shows it: the age of the knowledge rather than its time, since the
// question is how fresh it is.
type agreementRow struct {
	replica.PeerAgreement
	Label string // what the relation means, from this node's side
	Age   string // "" when the engine had no time yet
}

var agreementLabels = map[replica.Agreement]string{
	replica.AgreeEqual:      "equal",
	replica.AgreeBehind:     "peer behind",
	replica.AgreeAhead:      "peer ahead",
	replica.AgreeConcurrent: "concurrent",
}

func agreementRows(as []replica.PeerAgreement, now time.Time) []agreementRow {
	rows := make([]agreementRow, len(as))
	for i, a := range as {
		rows[i] = agreementRow{PeerAgreement: a, Label: agreementLabels[a.Agreement]}
		if rows[i].Label == "" {
			rows[i].Label = string(a.Agreement)
		}
		if !a.Told.IsZero() {
			rows[i].Age = age(now, a.Told)
		}
	}
	return rows
}

// age is how long before now t was, to the second ("1m30s ago"); a time
// after now (another node's clock ahead) is "0s ago".
func age(now, t time.Time) string {
	return max(now.Sub(t), 0).Round(time.Second).String() + " ago"
}

// projectionsPage is GET /ui/projections: the projections whose source
// or target the principal may see (projview.List decides).
func (c *Console) projectionsPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	if c.projViews == nil {
		return notFeature("projection")
	}
	list, err := c.projViews.List(r.Context(), ss.caller())
	if err != nil {
		return err
	}
	now := c.cfg.Now()
	rows := make([]projectionRow, len(list))
	for i, p := range list {
		rows[i] = projectionRow{ProjectionInfo: p}
		if p.LastDelivery != nil {
			rows[i].DeliveredAge = age(now, *p.LastDelivery)
		}
	}
	c.render(w, http.StatusOK, "projections", ss, "Projections", map[string]any{"Projections": rows})
	return nil
}

// projectionRow is a projection with the age of its view's last delivery
// ("" when the view holds nothing yet).
type projectionRow struct {
	memapi.ProjectionInfo
	DeliveredAge string
}
