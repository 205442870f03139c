package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Surgeon is the part of Backend behind mem_edit, mem_approve and
// mem_audit. The methods follow Backend's blocking and concurrency contract.
type Surgeon interface {
	ProposeEdit(ctx context.Context, req memapi.EditRequest) (memapi.EditResult, error)
	DecideEdit(ctx context.Context, editID string, approve bool) (memapi.Edit, error)
	Audit(ctx context.Context, q memapi.AuditQuery) (memapi.AuditResult, error)
}

type editArgs struct {
	ID              string   `json:"id" jsonschema:"Id of the memory to edit (from mem_search, mem_context or mem_get_observation)."`
	Op              string   `json:"op" jsonschema:"retract: remove it for good, everywhere (wrong, harmful or private data). amend: replace its text and/or importance. quarantine: keep it but hold it back from context and default search (unverified, suspicious). attenuate: lower (or raise) its importance. block: hide it from queries for one channel."`
	Reason          string   `json:"reason" jsonschema:"Why, in a sentence. Required; kept in the audit log for everyone who reads the memory."`
	Text            *string  `json:"text,omitempty" jsonschema:"amend: the corrected full text."`
	Importance      *float64 `json:"importance,omitempty" jsonschema:"amend or attenuate: the new importance, 0..1."`
	ImportanceDelta *float64 `json:"importance_delta,omitempty" jsonschema:"attenuate: added to the importance, e.g. -0.3 (result kept within 0..1)."`
	Channel         string   `json:"channel,omitempty" jsonschema:"block: the channel to hide it from (private, public, team or agent)."`
}

type approveArgs struct {
	EditID string `json:"edit_id" jsonschema:"Id of the pending edit (from mem_edit or mem_audit)."`
	Reject bool   `json:"reject,omitempty" jsonschema:"true rejects the edit instead of approving it."`
}

type auditArgs struct {
	ID        string `json:"id,omitempty" jsonschema:"A memory id: its edit history. Omit for every edit you can read."`
	Status    string `json:"status,omitempty" jsonschema:"Only edits with this status: pending, approved or rejected."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Only this namespace and its sub-namespaces."`
}

func auditText(res memapi.AuditResult) string {
	if len(res.Edits) == 0 && len(res.NeedsResummary) == 0 {
		return "No edits."
	}
	var b strings.Builder
	for i, e := range res.Edits {
		fmt.Fprintf(&b, "%d. %s %s of %s (%s) by %s at %s: %s", i+1, e.Op, e.Status, e.TargetID, e.Namespace, e.Proposer, e.CreatedAt.Format("2006-01-02 15:04"), e.Reason)
		if e.Approver != "" {
			fmt.Fprintf(&b, " [%s by %s]", e.Status, e.Approver)
		}
		fmt.Fprintf(&b, " (edit %s)\n", e.EditID)
	}
	if len(res.NeedsResummary) > 0 {
		b.WriteString("Derived memories to re-summarise (a source was retracted):\n")
		for _, r := range res.NeedsResummary {
			fmt.Fprintf(&b, "- %s %q in %s (retracted: %s)\n", r.ID, r.Title, r.Namespace, strings.Join(r.Retracted, ", "))
		}
	}
	return b.String()
}

// registerSurgeryTools adds mem_edit, mem_approve and mem_audit.
func registerSurgeryTools(s *mcp.Server, sg Surgeon) {
	write := &mcp.ToolAnnotations{DestructiveHint: boolp(true), OpenWorldHint: boolp(false)}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_edit",
		Annotations: withTitle(write, "Edit memory (governed)"),
		Description: `Correct or restrict a memory with an audited edit that holds on every node: retract (remove for good), amend (fix its text or importance), quarantine (hold back from automatic retrieval), attenuate (change importance) or block (hide from one channel). Use it when a memory is wrong, stale, harmful or private — not for ordinary updates of your own notes (mem_update).
A reason is required. Some edits need an admin's approval in some namespaces: then the answer says pending and nothing changes until it is approved.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a editArgs) (*mcp.CallToolResult, memapi.EditResult, error) {
		res, err := sg.ProposeEdit(ctx, memapi.EditRequest{TargetID: a.ID, Op: a.Op, Reason: a.Reason,
			Patch: memapi.EditPatch{Text: a.Text, Importance: a.Importance, ImportanceDelta: a.ImportanceDelta, Channel: a.Channel}})
		if err != nil {
			return nil, memapi.EditResult{}, toolError("mem_edit", err)
		}
		msg := fmt.Sprintf("Edit %s (%s of %s) is %s.", res.EditID, a.Op, a.ID, res.Status)
		if res.Status == memapi.StatusPending {
			msg += " It takes effect once an admin of the namespace approves it (mem_approve)."
		}
		return text(msg), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_approve",
		Annotations: withTitle(write, "Approve or reject an edit"),
		Description: `Approve (or, with reject=true, reject) a pending memory edit. Needs admin on the memory's namespace. Only do this when the user or your instructions ask you to review edits; find pending ones with mem_audit status=pending.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a approveArgs) (*mcp.CallToolResult, memapi.Edit, error) {
		e, err := sg.DecideEdit(ctx, a.EditID, !a.Reject)
		if err != nil {
			return nil, memapi.Edit{}, toolError("mem_approve", err)
		}
		return text(fmt.Sprintf("Edit %s (%s of %s) is now %s.", e.EditID, e.Op, e.TargetID, e.Status)), e, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_audit",
		Annotations: withTitle(read, "Memory edit history"),
		Description: `The audit log of memory edits: who changed or removed what, why, and whether it was approved — for one memory (id) or everything you can read. Also lists summaries and copies built from a memory that was since retracted, which should be re-summarised.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a auditArgs) (*mcp.CallToolResult, memapi.AuditResult, error) {
		res, err := sg.Audit(ctx, memapi.AuditQuery{ID: a.ID, Status: a.Status, Namespace: a.Namespace})
		if err != nil {
			return nil, memapi.AuditResult{}, toolError("mem_audit", err)
		}
		return text(auditText(res)), res, nil
	})
}
