package api

import (
	"fmt"
	"net/url"
	"strconv"
)

// PageQuery returns the query string ("?limit=...&after=...") that asks a
// list for the page of up to limit items after the cursor after.
func PageQuery(after string, limit int) string {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	return "?" + q.Encode()
}

// AllPages reads a list through to its last page. page reads the page that
// follows the cursor after ("" for the first) and returns its items and
// its Next. The cursor must move forward: a Next that does not is an error
// rather than an endless loop.
func AllPages[T any](page func(after string) (items []T, next string, err error)) ([]T, error) {
	all := []T{}
	after := ""
	for {
		items, next, err := page(after)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		switch {
		case next == "":
			return all, nil
		case next <= after:
			return nil, fmt.Errorf("the next page's cursor %q does not follow %q", next, after)
		}
		after = next
	}
}
