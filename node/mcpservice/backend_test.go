package mcpservice_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
)

// TestDuplicatesNeedTheFeature: without the dedup feature the duplicates
// tools answer not found, naming the missing feature; with it they reach
// the feature.
func TestDuplicatesNeedTheFeature(t *testing.T) {
	ctx := context.Background()
	alice := memorytest.Agent("alice")
	bare, _ := memorytest.Open(t, memory.Config{})
	b := mcpservice.New(bare, alice)
	if _, err := b.Duplicates(ctx, memapi.DuplicateQuery{}); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("duplicates without the feature: %v", err)
	}
	if _, err := b.MergeDuplicates(ctx, memapi.MergeRequest{IDs: []string{"a", "b"}, Namespace: "agent://alice"}); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("merge without the feature: %v", err)
	}

	dd, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := memorytest.Open(t, memory.Config{Features: []memory.Feature{dd}})
	b = mcpservice.New(svc, alice)
	if res, err := b.Duplicates(ctx, memapi.DuplicateQuery{}); err != nil || res.Pairs == nil {
		t.Fatalf("duplicates with the feature: %+v %v", res, err)
	}
	if _, err := b.MergeDuplicates(ctx, memapi.MergeRequest{IDs: []string{"a"}, Namespace: "agent://alice"}); !errors.Is(err, memapi.ErrInvalid) {
		t.Fatalf("merge of one id with the feature: %v", err)
	}
}
