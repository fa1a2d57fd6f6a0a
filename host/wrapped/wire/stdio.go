package wire

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ExitError ends the connection to a stdio server whose process exited.
type ExitError struct {
	// State is the server process's end.
	State *os.ProcessState
}

func (e *ExitError) Error() string { return "the server exited: " + e.State.String() }

// Stdio starts cmd, a stdio server, and connects to it over its stdin and
// stdout (cmd.Stdin and cmd.Stdout must be unset). Closing the Conn closes
// the server's stdin, gives it terminate (default 2 s) to exit, then
// SIGTERM, then as long again before it is killed; a server that exits
// ends the connection with an *ExitError.
func Stdio(cmd *exec.Cmd, terminate time.Duration, o *Options) (*Conn, error) {
	// Pipes of our own, not cmd's StdinPipe/StdoutPipe: cmd.Wait closes
	// those as soon as the process exits, which would drop the last
	// answers it wrote before exiting, still unread in the pipe.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start the server: %w", err)
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, terminate: cmp.Or(terminate, 2*time.Second), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return newConn(context.Background(), &stream{r: outR, w: inW, ended: p.ended, closer: p.close}, o)
}

// Stream connects over r and w, newline-delimited JSON (a child's stdout
// and stdin, or a pipe in a test). Closing the Conn closes w.
func Stream(r io.Reader, w io.WriteCloser, o *Options) (*Conn, error) {
	return newConn(context.Background(), &stream{r: r, w: w, closer: w.Close}, o)
}

// process is a stdio server's process.
type process struct {
	cmd       *exec.Cmd
	stdin     io.Closer
	stdout    io.Closer
	terminate time.Duration
	exited    chan struct{} // closed once cmd.Wait returned
	once      sync.Once
}

// ended is why the server's stdout ended (read error err): its exit, when
// it exited; otherwise the server is made to.
func (p *process) ended(err error) error {
	select {
	case <-p.exited:
		return &ExitError{State: p.cmd.ProcessState}
	case <-time.After(p.terminate):
	}
	_ = p.close()
	return fmt.Errorf("the server closed its output (%v) and was stopped", err)
}

// close asks the server to exit (its stdin closed), then makes it.
func (p *process) close() error {
	p.once.Do(func() {
		exitedWithin := func() bool {
			select {
			case <-p.exited:
				return true
			case <-time.After(p.terminate):
				return false
			}
		}
		_ = p.stdin.Close()
		if !exitedWithin() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if !exitedWithin() {
				_ = p.cmd.Process.Kill()
			}
		}
		<-p.exited
		_ = p.stdout.Close()
	})
	return nil
}

// stream is the transport of newline-delimited JSON over a reader and a
// writer.
type stream struct {
	c      *Conn
	r      io.Reader
	w      io.Writer
	ended  func(error) error // what the end of r means (nil: itself)
	closer func() error

	mu      sync.Mutex
	queue   []byte // messages waiting for the writer
	spare   []byte
	writing bool // a sender is writing the queue
	werr    error
}

func (s *stream) start(_ context.Context, c *Conn) error {
	s.c = c
	go s.read(c)
	return nil
}

func (s *stream) initialized(string) {}

func (s *stream) close() error { return s.closer() }

// read hands each line to c until r ends; a line over c's MaxMessage ends
// the connection, naming the limit.
func (s *stream) read(c *Conn) {
	br := bufio.NewReaderSize(s.r, 64<<10)
	var long []byte // a line longer than br's buffer, gathered
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(long) > 0 {
			long = append(long, chunk...)
			if len(long) > c.opts.MaxMessage+1 { // +1: the newline
				c.fail(fmt.Errorf("the server sent a message over %d bytes, the limit of a wrapped server's message", c.opts.MaxMessage))
				_ = s.closer()
				return
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			chunk = long
		}
		c.receive(chunk)
		if cap(long) > 1<<20 {
			long = nil // a rare big message's buffer is not kept
		}
		long = long[:0]
		if err != nil {
			if s.ended != nil {
				err = s.ended(err)
			} else if errors.Is(err, io.EOF) {
				err = errors.New("the server closed the connection")
			}
			c.fail(err)
			return
		}
	}
}

// send queues msg and, unless a sender is writing already (who then
// writes it too), writes the queue: messages sent meanwhile by other
// calls leave in one write.
func (s *stream) send(_ context.Context, msg []byte, _ int64) error {
	s.mu.Lock()
	if s.werr != nil {
		err := s.werr
		s.mu.Unlock()
		return err
	}
	s.queue = append(append(s.queue, msg...), '\n')
	if s.writing {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	for len(s.queue) > 0 && s.werr == nil {
		b := s.queue
		s.queue = s.spare[:0]
		s.mu.Unlock()
		_, err := s.w.Write(b)
		s.mu.Lock()
		if cap(b) <= 1<<20 {
			s.spare = b[:0]
		} else {
			s.spare = nil
		}
		if err != nil {
			s.werr = fmt.Errorf("write to the server: %w", err)
		}
	}
	s.writing = false
	err := s.werr
	s.mu.Unlock()
	if err != nil {
		// A write fails when the server is gone: why (its exit) is the
		// reader's to say, shortly.
		select {
		case <-s.c.done:
			return s.c.Err()
		case <-time.After(time.Second):
		}
	}
	return err
}
