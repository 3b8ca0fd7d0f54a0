package compare

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Profiler fetches a CPU profile of each node (/debug/pprof/profile:
// `lockd serve --pprof` serves it on the HTTP port, `etcd
// --enable-pprof` on the client port) while an etcd-API row runs, for as
// long as the row's measured time, into Dir as ROW-N-nI.pb.gz (node I
// from 1, in the order of Endpoints), for `go tool pprof`. A profile that
// cannot be fetched is reported through Progress and does not stop the
// row.
type Profiler struct {
	Dir string
	// Endpoints are the nodes' URLs that serve /debug/pprof (or
	// host:port).
	Endpoints []string
	Progress  func(line string)

	mu    sync.Mutex
	files []string
}

// Files are the profiles written so far.
func (p *Profiler) Files() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.files...)
}

func (p *Profiler) progress(format string, args ...any) {
	if p.Progress != nil {
		p.Progress(fmt.Sprintf(format, args...))
	}
}

// start returns ready, which starts the row's profiles (only its first
// call does anything), and wait, which waits for them to be written. A
// nil Profiler profiles nothing.
func (p *Profiler) start(label string, d time.Duration) (ready, wait func()) {
	if p == nil {
		return func() {}, func() {}
	}
	secs := max(1, int(math.Ceil(d.Seconds())))
	var once sync.Once
	var wg sync.WaitGroup
	ready = func() {
		once.Do(func() {
			p.progress("profiling %s on %d nodes for %d s", label, len(p.Endpoints), secs)
			for i, ep := range p.Endpoints {
				wg.Add(1)
				go func() {
					defer wg.Done()
					path := filepath.Join(p.Dir, fmt.Sprintf("%s-n%d.pb.gz", label, i+1))
					if err := fetchProfile(ep, secs, path); err != nil {
						p.progress("profile of %s on %s: %v", label, ep, err)
						return
					}
					p.mu.Lock()
					p.files = append(p.files, path)
					p.mu.Unlock()
				}()
			}
		})
	}
	return ready, wg.Wait
}

// fetchProfile writes endpoint's CPU profile of secs seconds to path.
func fetchProfile(endpoint string, secs int, path string) error {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(endpoint, "/"), secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d (does the node serve /debug/pprof?)", url, resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
