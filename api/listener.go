package api

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
)

// connLimiter wraps the server's listener: at most max connections are
// open at once, and at most perIP from one client address. A connection
// over either limit is answered at once with a JSON error (429
// rate_limited for one address, 503 unavailable for the whole server, both
// with Retry-After) and closed, so a flood of connections costs no more
// than the ones admitted.
type connLimiter struct {
	net.Listener
	max, perIP int

	mu      sync.Mutex
	open    int
	byIP    map[string]int
	refused func(net.Conn, *errs.Error)
}

// refusalTimeout bounds the write of a refusal to a client that does not read.
const refusalTimeout = time.Second

func newConnLimiter(ln net.Listener, max, perIP int) *connLimiter {
	return &connLimiter{Listener: ln, max: max, perIP: perIP, byIP: map[string]int{}, refused: refuse}
}

// Accept returns the next connection within the limits; connections over
// them are refused here and never reach the server.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		l.mu.Lock()
		var e *errs.Error
		switch {
		case l.open >= l.max:
			e = errs.New(errs.Unavailable, "the server has its maximum of %d connections open; retry shortly", l.max)
		case l.byIP[ip] >= l.perIP:
			e = errs.New(errs.RateLimited, "your address has %d connections open, the most allowed; reuse connections (keep-alive) or close some", l.perIP)
		default:
			l.open++
			l.byIP[ip]++
		}
		l.mu.Unlock()
		if e != nil {
			go l.refused(c, e)
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// limitedConn gives its place back once, when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// refuse writes e as a complete HTTP response with Retry-After and closes c.
func refuse(c net.Conn, e *errs.Error) {
	defer c.Close()
	body, err := marshal(errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
	if err != nil {
		return
	}
	status := StatusFor(e.Code)
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: " + contentTypeJSON + "\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Retry-After: 1\r\nConnection: close\r\n\r\n"
	_ = c.SetWriteDeadline(time.Now().Add(refusalTimeout))
	_, _ = c.Write(append([]byte(head), body...))
}

// clientIP is the address part of a remote address.
func clientIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
