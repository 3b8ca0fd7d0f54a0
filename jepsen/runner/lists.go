package runner

import (
	"context"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/proccluster"
)

// allSessions reads every session from node l, page by page.
func allSessions(ctx context.Context, l *proccluster.Node) ([]wire.Session, error) {
	return listAll(ctx, l, "/v1/sessions", func(p *wire.SessionList) ([]wire.Session, string) { return p.Sessions, p.Next })
}

// allLocks reads every existing lock from node l, page by page.
func allLocks(ctx context.Context, l *proccluster.Node) ([]wire.Lock, error) {
	return listAll(ctx, l, "/v1/locks", func(p *wire.LockList) ([]wire.Lock, string) { return p.Locks, p.Next })
}

// listAll reads a list from node l through to its last page.
func listAll[L, T any](ctx context.Context, l *proccluster.Node, path string, items func(*L) ([]T, string)) ([]T, error) {
	return wire.AllPages(func(after string) ([]T, string, error) {
		var page L
		if err := l.Do(ctx, "GET", path+wire.PageQuery(after, wire.MaxListLimit), nil, &page); err != nil {
			return nil, "", err
		}
		got, next := items(&page)
		return got, next, nil
	})
}
