package dedup

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Merge merges req.IDs within req.Namespace (see the package doc) and
// returns the survivor as the caller now reads it. The caller needs write
// on the namespace and read on every id: an id it cannot read, or a
// retracted one, is memapi.ErrNotFound; a missing write is acl.ErrDenied;
// fewer than two ids, or none in the namespace, is memapi.ErrInvalid.
func (d *Dedup) Merge(ctx context.Context, c memapi.Caller, req memapi.MergeRequest) (memapi.MergeResult, error) {
	if strings.TrimSpace(req.Namespace) == "" {
		return memapi.MergeResult{}, invalid("namespace (the shared namespace to merge in) is required")
	}
	ns, err := d.core.ResolveWrite(c, req.Namespace)
	if err != nil {
		return memapi.MergeResult{}, err
	}
	var ids []string
	for _, id := range req.IDs {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 || len(ids) > maxMergeIDs {
		return memapi.MergeResult{}, invalid("ids must name 2..%d distinct memories, got %d", maxMergeIDs, len(ids))
	}
	mems := make([]memory.Memory, len(ids))
	survivor := -1
	for i, id := range ids {
		mns, rec, err := d.core.Locate(c, id, false)
		if err != nil {
			return memapi.MergeResult{}, err
		}
		m, fl := d.core.View(mns.String(), id, rec)
		if fl.Retracted {
			return memapi.MergeResult{}, fmt.Errorf("%w: memory %q", memapi.ErrNotFound, id)
		}
		mems[i] = m
		if survivor < 0 && mns == ns {
			survivor = i
		}
	}
	if survivor < 0 {
		return memapi.MergeResult{}, invalid("none of the ids is in %s: share or promote one there first", ns)
	}
	surv := mems[survivor]
	res := memapi.MergeResult{Merged: []string{}, Contributors: []string{}, ConfidenceBefore: surv.Confidence}
	prov := slices.Clone(surv.Provenance)
	for i, m := range mems {
		prov = append(prov, m.Provenance...)
		if m.Author != "" {
			prov = append(prov, "author:"+m.Author)
		}
		if i == survivor {
			continue
		}
		prov = append(prov, "source:"+m.ID)
		if m.Namespace == ns.String() {
			res.Merged = append(res.Merged, m.ID)
		} else {
			res.Contributors = append(res.Contributors, m.ID)
		}
		for j := range i {
			if independent(mems[j], m) {
				res.Independent = true
			}
		}
	}
	slices.Sort(prov)
	prov = slices.Compact(prov)
	res.ConfidenceAfter = surv.Confidence
	if res.Independent {
		res.ConfidenceAfter = boosted(surv.Confidence)
	}
	var conf *float64
	if res.ConfidenceAfter != res.ConfidenceBefore {
		conf = &res.ConfidenceAfter
	}
	err = d.writeMerge(surv, prov, conf, res.Merged)
	if err != nil {
		return memapi.MergeResult{}, err
	}
	res.Memory, err = d.core.Service().Get(ctx, c, surv.ID, false)
	return res, err
}

// boosted is confidence c raised by ConsensusBoost, at most 1 (rounded to
// 1e-9, so repeated boosts give the same decimal).
func boosted(c float64) float64 { return min(1, math.Round((c+ConsensusBoost)*1e9)/1e9) }

// writeMerge writes a merge in one transaction: the survivor gains the
// provenance entries of prov it lacks, conf as its confidence (nil: kept)
// and a touch; each loser id, of the survivor's namespace, is soft-deleted
// with the survivor as its lineage. Merge and merging on save both write
// through it.
func (d *Dedup) writeMerge(surv memory.Memory, prov []string, conf *float64, losers []string) error {
	return d.core.Write(func(tx *store.Tx) error {
		now, ts := d.core.Now()
		e, err := tx.Edit(surv.Namespace, surv.ID)
		if err != nil {
			return err
		}
		for _, p := range prov {
			if !slices.Contains(surv.Provenance, p) {
				if err := e.Add(schema.SetProvenance, p); err != nil {
					return err
				}
			}
		}
		if conf != nil {
			if err := e.Set(ts, schema.FieldConfidence, schema.EncodeNum(*conf)); err != nil {
				return err
			}
		}
		if err := schema.Touch(e, ts, now); err != nil {
			return err
		}
		tx.Commit(surv.Namespace, surv.ID, e)
		for _, id := range losers {
			e, err := tx.Edit(surv.Namespace, id)
			if err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldDeletedAt, schema.EncodeTime(now)); err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldLineage, []byte(surv.ID)); err != nil {
				return err
			}
			if err := schema.Touch(e, ts, now); err != nil {
				return err
			}
			tx.Commit(surv.Namespace, id, e)
		}
		return nil
	})
}
