package runner

import (
	"context"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/proccluster"
)

// allSessions reads every session from node l, page by page.
func allSessions(ctx context.Context, l *proccluster.Node) ([]api.Session, error) {
	return listAll(ctx, l, "/v1/sessions", func(p *api.SessionList) ([]api.Session, string) { return p.Sessions, p.Next })
}

// allLocks reads every existing lock from node l, page by page.
func allLocks(ctx context.Context, l *proccluster.Node) ([]api.Lock, error) {
	return listAll(ctx, l, "/v1/locks", func(p *api.LockList) ([]api.Lock, string) { return p.Locks, p.Next })
}

// listAll reads a list from node l through to its last page.
func listAll[L, T any](ctx context.Context, l *proccluster.Node, path string, items func(*L) ([]T, string)) ([]T, error) {
	return api.AllPages(func(after string) ([]T, string, error) {
		var page L
		if err := l.Do(ctx, "GET", path+api.PageQuery(after, api.MaxListLimit), nil, &page); err != nil {
			return nil, "", err
		}
		got, next := items(&page)
		return got, next, nil
	})
}
