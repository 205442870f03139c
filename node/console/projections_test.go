package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/projection"
)

// The projections page shows what a view delivered and how long ago its
// last change was delivered, to the creator and to the target.
func TestProjectionsPageShowsDeliveredAndLastDelivery(t *testing.T) {
	f := newFixture(t, nil)
	info, err := projview.Of(f.svc).Create(context.Background(), memorytest.Agent("alice"), memapi.ProjectionRequest{
		Source: "agent://alice", Target: "agent://bob", Filter: projection.Filter{Tags: []string{"ship"}}, Level: projection.L2})
	if err != nil {
		t.Fatal(err)
	}
	owner := f.browser()
	owner.signIn(ownerToken)
	if row := projectionRowOf(t, owner.get("/ui/projections").body, info.ID); !strings.Contains(row, "<td>0</td><td>—</td>") {
		t.Errorf("an empty view: row %s, want 0 delivered and no last delivery", row)
	}
	save(t, f.svc, "alice", memapi.SaveRequest{Type: "note", Title: "shipped", Content: "the release shipped", Tags: []string{"ship"}})
	save(t, f.svc, "alice", memapi.SaveRequest{Type: "note", Title: "kept", Content: "not for bob", Tags: []string{"other"}})
	f.clk.Advance(2*time.Minute + 400*time.Millisecond)
	bob := f.browser()
	bob.signIn("bob-token-0123456789")
	for who, b := range map[string]*browser{"owner": owner, "bob": bob} {
		row := projectionRowOf(t, b.get("/ui/projections").body, info.ID)
		if !strings.Contains(row, "<td>1</td><td><span title=") || !strings.Contains(row, ">2m0s ago</span>") {
			t.Errorf("%s sees row %s, want 1 delivered, 2m0s ago", who, row)
		}
	}
}

// projectionRowOf is the table row of projection id on the page.
func projectionRowOf(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, "<code>"+id+"</code>")
	if i < 0 {
		t.Fatalf("no row for projection %s", id)
	}
	row, _, _ := strings.Cut(body[i:], "</tr>")
	return row
}
