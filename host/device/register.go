package device

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/catalog"
)

// register replaces the device's services and publishes them.
func (c *conn) register(f Frame, data json.RawMessage) {
	var reg struct {
		Services map[string]json.RawMessage `json:"services"`
	}
	if err := json.Unmarshal(data, &reg); err != nil || reg.Services == nil {
		detail := `"data" must hold a "services" object`
		if err != nil {
			detail += ": " + err.Error()
		}
		c.statusError(f.Task, f.Seq, "register: "+detail)
		return
	}
	names := make([]string, 0, len(reg.Services))
	for n := range reg.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	var problems []string
	if len(names) > maxServices {
		problems = append(problems, fmt.Sprintf("%d services, the limit is %d: the rest are ignored", len(names), maxServices))
		names = names[:maxServices]
	}
	var svcs []*service
	for _, n := range names {
		s, err := parseService(n, reg.Services[n])
		if err != nil {
			problems = append(problems, fmt.Sprintf("service %q: %v", n, err))
			continue
		}
		svcs = append(svcs, s)
	}

	c.mu.Lock()
	first := c.name == ""
	voice := c.voice
	c.mu.Unlock()
	name := ""
	if first {
		name = c.s.claimName(c, voice)
	}
	c.mu.Lock()
	if first {
		c.name = name
		named := c.log().With("device", name)
		c.logp.Store(&named)
	}
	name = c.name
	c.mcpTask = f.Task
	c.services = svcs
	c.byName = make(map[string]*service, len(svcs))
	for _, s := range svcs {
		c.byName[s.name] = s
	}
	c.mu.Unlock()
	c.s.opts.Publisher.Set(c)
	if sr, ok := c.s.opts.Publisher.(skipReporter); ok {
		problems = append(problems, unpublished(sr.SkippedOf(name))...)
	}
	c.log().Info("device registered services", "services", len(svcs), "refused", len(problems))
	if len(problems) > 0 {
		c.statusError(f.Task, f.Seq, "register: "+strings.Join(problems, "; "))
	}
}

// unpublished says which of a device's tools the publisher left out: a
// line for each reason, with how many and the first few names, so that a
// device past a limit by thousands of services gets a short answer.
func unpublished(skips []catalog.Skip) []string {
	const first = 3
	var reasons []string
	names := map[string][]string{}
	for _, sk := range skips {
		if sk.Kind != catalog.KindTool {
			continue
		}
		if _, ok := names[sk.Reason]; !ok {
			reasons = append(reasons, sk.Reason)
		}
		names[sk.Reason] = append(names[sk.Reason], sk.Name)
	}
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		ns := names[r]
		shown := strings.Join(ns[:min(len(ns), first)], ", ")
		if len(ns) > first {
			shown += ", …"
		}
		out = append(out, fmt.Sprintf("%d services not published (%s): %s", len(ns), shown, r))
	}
	return out
}
