package sim

import (
	"context"
	"strings"

	"github.com/mnemohq/mnemo/node/memory"
)

// Permissions in the simulation are real signed acl records: each
// namespace is created by a random node's agent (Service.CreateNamespace)
// and only that agent grants and revokes (Service.Grant, Service.Revoke).
// The records travel inside the namespace they govern, through the real
// loop, as they do between nodes. The oracle the checkers use is the
// creator's own node's policy right after it signs (it holds every record
// of its namespace at once): read and write per node and namespace now,
// and whether each was ever held.

// initACL creates every namespace on its creator's node and grants members
// (read+write, some with share) and readers at random.
func (s *Sim) initACL() error {
	s.read = grid(len(s.nodes), len(s.nss))
	s.write = grid(len(s.nodes), len(s.nss))
	s.everRead = grid(len(s.nodes), len(s.nss))
	s.everWrit = grid(len(s.nodes), len(s.nss))
	s.ids = make([][]string, len(s.nss))
	s.creator = make([]int, len(s.nss))
	for j, ns := range s.nss {
		c := s.nodes[s.rng.IntN(len(s.nodes))]
		s.creator[j] = c.idx
		if err := s.run(c, func(ctx context.Context) error {
			_, err := c.svc.CreateNamespace(ctx, c.me, ns)
			return err
		}); err != nil {
			return err
		}
		s.acknowledge(c, "create", ns, "")
		s.evalPolicy(j)
		for _, n := range s.nodes {
			if n == c {
				continue
			}
			var perms []string
			switch x := s.rng.Float64(); {
			case x < 0.2:
				perms = []string{"member", "share"} // capsules and projections need share
			case x < 0.45:
				perms = []string{"member"}
			case x < 0.7 && strings.HasPrefix(ns, "team://"):
				perms = []string{"read"}
			}
			if perms == nil {
				continue
			}
			if err := s.grant(j, n.idx, perms); err != nil {
				return err
			}
		}
	}
	return nil
}

func grid(a, b int) [][]bool {
	g := make([][]bool, a)
	for i := range g {
		g[i] = make([]bool, b)
	}
	return g
}

// grant has namespace j's creator grant perms to node i's agent.
func (s *Sim) grant(j, i int, perms []string) error {
	c := s.nodes[s.creator[j]]
	err := s.run(c, func(ctx context.Context) error {
		_, err := c.svc.Grant(ctx, c.me, memory.GrantRequest{Namespace: s.nss[j], Principal: s.nodes[i].principal.String(), Permissions: perms})
		return err
	})
	if err != nil {
		return err
	}
	s.stats.grants++
	s.acknowledge(c, "grant", s.nss[j], "")
	s.tracef("grant %s %s to %s", strings.Join(perms, ","), s.nss[j], s.nodes[i].id)
	s.evalPolicy(j)
	return nil
}

// evalPolicy reads namespace j's permissions from its creator's node.
func (s *Sim) evalPolicy(j int) {
	c := s.nodes[s.creator[j]]
	// A project is readable by every agent the cluster binds to a member's
	// key (acl.Policy.Allowed): every simulated agent, once its node's
	// binding has arrived.
	project := strings.HasPrefix(s.nss[j], "project://")
	for i, n := range s.nodes {
		r, w := project || c.svc.MayRead(n.principal, s.nss[j]), c.svc.MayWrite(n.principal, s.nss[j])
		s.read[i][j], s.write[i][j] = r, w
		s.everRead[i][j] = s.everRead[i][j] || r
		s.everWrit[i][j] = s.everWrit[i][j] || w
	}
}

// opGrant grants read (team only) or membership to an agent lacking write.
func (s *Sim) opGrant() {
	j := s.wr.IntN(len(s.nss))
	if !s.nodes[s.creator[j]].up {
		s.stats.skipped++
		return
	}
	var cand []int
	for i := range s.nodes {
		if !s.write[i][j] && !s.forgers[[2]int{i, j}] {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	i := cand[s.wr.IntN(len(cand))]
	perms := []string{"member"}
	if strings.HasPrefix(s.nss[j], "team://") && !s.read[i][j] && s.wr.IntN(2) == 0 {
		perms = []string{"read"}
	}
	if err := s.grant(j, i, perms); err != nil {
		s.tracef("grant refused: %v", err)
		s.stats.skipped++
	}
}

// opRevoke revokes read from a reader of a team namespace that never wrote
// it. Write is never revoked: the engine checks every dot of a record
// against the writer's permission now, so revoking write would make the
// writer's past dots unacceptable — a policy question for the engine, not
// something to simulate around.
func (s *Sim) opRevoke() {
	var cand [][2]int
	for j, ns := range s.nss {
		if !strings.HasPrefix(ns, "team://") || !s.nodes[s.creator[j]].up {
			continue
		}
		for i := range s.nodes {
			if s.read[i][j] && !s.everWrit[i][j] && i != s.creator[j] {
				cand = append(cand, [2]int{i, j})
			}
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	p := cand[s.wr.IntN(len(cand))]
	i, j := p[0], p[1]
	c := s.nodes[s.creator[j]]
	err := s.run(c, func(ctx context.Context) error {
		_, err := c.svc.Revoke(ctx, c.me, memory.GrantRequest{Namespace: s.nss[j], Principal: s.nodes[i].principal.String(), Permissions: []string{"read"}})
		return err
	})
	if err != nil {
		s.tracef("revoke refused: %v", err)
		s.stats.skipped++
		return
	}
	s.stats.revokes++
	s.acknowledge(c, "revoke", s.nss[j], "")
	s.tracef("revoke read %s from %s", s.nss[j], s.nodes[i].id)
	s.evalPolicy(j)
}
