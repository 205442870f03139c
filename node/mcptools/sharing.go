package mcptools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Sharer is the part of Backend behind mem_share and mem_promote. Both
// methods follow Backend's blocking and concurrency contract.
type Sharer interface {
	Share(ctx context.Context, req memapi.ShareRequest) (memapi.ShareResult, error)
	Promote(ctx context.Context, req memapi.PromoteRequest) (memapi.ShareResult, error)
}

type shareArgs struct {
	ID        string `json:"id" jsonschema:"Id of the memory to share."`
	Namespace string `json:"namespace" jsonschema:"Where to copy it: a namespace you may write, e.g. team://backend or agent://reviewer."`
}

type promoteArgs struct {
	ID        string `json:"id" jsonschema:"Id of the memory to promote."`
	Namespace string `json:"namespace" jsonschema:"The team:// or project:// namespace to promote it into."`
	Mode      string `json:"mode,omitempty" jsonschema:"copy (default): keep your memory too. move: your memory is archived and replaced by a reference that resolves to the promoted one."`
}

func copiedText(verb string, r memapi.ShareResult) string {
	s := fmt.Sprintf("%s memory %s into %s as %s", verb, r.Memory.Lineage, r.Memory.Namespace, r.Memory.ID)
	if r.Existing {
		s += " (that copy already existed)"
	}
	if r.Reference != nil {
		s += fmt.Sprintf("; reference %s left in %s", r.Reference.ID, r.Reference.Namespace)
	}
	return s + "."
}

// registerSharingTools adds mem_share and mem_promote.
func registerSharingTools(s *mcp.Server, sh Sharer) {
	write := &mcp.ToolAnnotations{DestructiveHint: boolp(false), OpenWorldHint: boolp(false)}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_share",
		Annotations: withTitle(write, "Share memory"),
		Description: `Copy one of your memories into another namespace (a team, a project, another agent that granted you write) so others can find it. The copy is a snapshot: later edits of yours do not follow it. Sharing the same memory there again returns the existing copy.
Needs share permission on the memory's namespace (you hold it on your own) and write on the target.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a shareArgs) (*mcp.CallToolResult, memapi.ShareResult, error) {
		res, err := sh.Share(ctx, memapi.ShareRequest{ID: a.ID, Namespace: a.Namespace})
		if err != nil {
			return nil, memapi.ShareResult{}, toolError("mem_share", err)
		}
		return text(copiedText("Shared", res)), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_promote",
		Annotations: withTitle(write, "Promote memory"),
		Description: `Promote a memory into a team:// or project:// namespace, as settled shared knowledge. mode copy (default) keeps yours; mode move archives yours and leaves a reference that resolves to the promoted memory.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a promoteArgs) (*mcp.CallToolResult, memapi.ShareResult, error) {
		res, err := sh.Promote(ctx, memapi.PromoteRequest{ID: a.ID, Namespace: a.Namespace, Mode: a.Mode})
		if err != nil {
			return nil, memapi.ShareResult{}, toolError("mem_promote", err)
		}
		return text(copiedText("Promoted", res)), res, nil
	})
}
