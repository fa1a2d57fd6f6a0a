package serve

import (
	"context"
	"errors"

	"github.com/plughost/plughost/host/console"
)

// consoleSource is the running host as the console shows it
// (console.Source).
//
// STUB: the methods are filled by the console data work.
type consoleSource struct{ h *Host }

var _ console.Source = (*consoleSource)(nil)

var errNotYet = errors.New("not built yet")

func (s *consoleSource) Plugins() []console.Plugin                          { return nil }
func (s *consoleSource) Catalog(c *console.Caller) console.Catalog          { return console.Catalog{} }
func (s *consoleSource) Sessions() []console.Session                        { return nil }
func (s *consoleSource) Tasks(context.Context, int) ([]console.Task, error) { return nil, errNotYet }
func (s *consoleSource) Calls() []console.ToolCalls                         { return nil }
func (s *consoleSource) Audit(n int) []string                               { return nil }
func (s *consoleSource) Config() []console.Setting                          { return nil }
func (s *consoleSource) Approve(ctx context.Context, plugin, digest, by string) error {
	return errNotYet
}
func (s *consoleSource) Revoke(ctx context.Context, plugin, by string) error { return errNotYet }
func (s *consoleSource) Watch(changed func(console.Event)) (stop func())     { return func() {} }
