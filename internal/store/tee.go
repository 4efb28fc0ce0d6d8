package store

import (
	"context"
	"errors"

	"github.com/noticesd/noticesd/internal/notice"
)

// TeeRegister returns a RegisterWriter that loads the same rows into every
// writer: the scale backend's composite uses it to keep the Elasticsearch
// register and the Redis identifier sets in step. Begin, Add and Commit
// stop at the first error (rolling every load back); Commit commits the
// loads in order, so put the one readers depend on most last.
func TeeRegister(ws ...RegisterWriter) RegisterWriter { return tee(ws) }

type tee []RegisterWriter

type teeLoad []RegisterLoad

func (t tee) BeginRegister(ctx context.Context) (RegisterLoad, error) {
	loads := make(teeLoad, 0, len(t))
	for _, w := range t {
		l, err := w.BeginRegister(ctx)
		if err != nil {
			return nil, errors.Join(err, loads.Rollback())
		}
		loads = append(loads, l)
	}
	return loads, nil
}

func (ls teeLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	for _, l := range ls {
		if err := l.Add(ctx, rows); err != nil {
			return err
		}
	}
	return nil
}

func (ls teeLoad) Commit(ctx context.Context) error {
	for _, l := range ls {
		if err := l.Commit(ctx); err != nil {
			return errors.Join(err, ls.Rollback())
		}
	}
	return nil
}

func (ls teeLoad) Rollback() error {
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Rollback())
	}
	return errors.Join(errs...)
}
