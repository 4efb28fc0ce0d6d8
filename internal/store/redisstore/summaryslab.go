package redisstore

import (
	"encoding/binary"
	"unsafe"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// summarySlab is a replica's copy of the published notices: their
// summaries by seq, their index by identifier (post) and its publish log
// position (last, apply: noticecopy.go), without a string, map entry or
// pointer per notice (the encoding, and why chunks are append-only:
// docs/redis.md, "The notices"); in tuples the appointment type is coded
// plus one, 0 for none. put and remove keep the index a function of the
// summaries, so putting a seq's current summary again, in any order,
// leaves it exact.
type summarySlab struct {
	dense   []uint64 // seq (publog hands them out densely) -> location: chunk+1 <<32 | offset, 0 for none
	tupleOf []uint32 // seq -> its tuple: a screen decides a seq's filters without reading it
	chunks  [][]byte
	live    int // bytes of the summaries held
	dead    int // bytes of replaced or removed summaries
	dict    []string
	dictIx  map[string]uint64
	tuples  [][7]uint64
	tupleIx map[[7]uint64]uint64
	post    postings
	last    string // the id of the last publish log entry applied
}

// chunkSize is the size of a chunk (a longer summary gets a chunk of its
// own).
const chunkSize = 1 << 22

func loc(chunk, off int) uint64 { return uint64(chunk+1)<<32 | uint64(off) }

func (s *summarySlab) where(seq int64) uint64 {
	if seq >= 0 && seq < int64(len(s.dense)) {
		return s.dense[seq]
	}
	return 0
}

// intern returns v's number in list (its index), adding it when new.
func intern[K comparable](ix *map[K]uint64, list *[]K, v K) uint64 {
	if c, ok := (*ix)[v]; ok {
		return c
	}
	if *ix == nil {
		*ix = map[K]uint64{}
	}
	c := uint64(len(*list))
	*list = append(*list, v)
	(*ix)[v] = c
	return c
}

// put sets seq's summary (replacing any).
func (s *summarySlab) put(seq int64, n *notice.Notice) {
	s.remove(seq)
	code := func(v string) uint64 { return intern(&s.dictIx, &s.dict, v) }
	app := uint64(0)
	if n.AppointmentType != nil {
		app = code(*n.AppointmentType) + 1
	}
	t := intern(&s.tupleIx, &s.tuples, [7]uint64{code(n.PublishedDate), code(n.NoticeType), code(n.NoticeCode),
		code(n.NoticePurpose), code(n.State), code(n.Status), app})
	var buf [256]byte
	enc := buf[:0]
	id := publog.Idents(n)
	for _, v := range id {
		s.post.add(v, seq)
	}
	for _, v := range [5]string{n.ID, n.PublishedAt, id[0], id[1], n.CompanyName} {
		enc = binary.AppendUvarint(enc, uint64(len(v)))
		enc = append(enc, v...)
	}
	if seq >= int64(len(s.dense)) { // grow the dense range, at least twofold
		more := max(seq+1, 2*int64(len(s.dense))) - int64(len(s.dense))
		s.dense = append(s.dense, make([]uint64, more)...)
		s.tupleOf = append(s.tupleOf, make([]uint32, more)...)
	}
	s.dense[seq], s.tupleOf[seq] = loc(appendChunk(&s.chunks, enc)), uint32(t)
	s.live += len(enc)
}

// appendChunk appends b to the last of chunks (a new chunk when it is
// full) and returns where it went.
func appendChunk[B []byte | string](chunks *[][]byte, b B) (chunk, off int) {
	last := len(*chunks) - 1
	if last < 0 || len((*chunks)[last])+len(b) > cap((*chunks)[last]) {
		*chunks = append(*chunks, make([]byte, 0, max(chunkSize, len(b))))
		last++
	}
	off = len((*chunks)[last])
	(*chunks)[last] = append((*chunks)[last], b...)
	return last, off
}

// remove drops seq's summary, if any, compacting the chunks when most of
// their bytes are dead.
func (s *summarySlab) remove(seq int64) {
	l := s.where(seq)
	if l == 0 {
		return
	}
	r := read(s.chunks, l)
	s.post.remove(r.str[2], seq)
	s.post.remove(r.str[3], seq)
	s.dense[seq] = 0
	s.live -= len(r.enc)
	s.dead += len(r.enc)
	if s.dead > s.live && s.dead > chunkSize {
		// The old chunks stay as they are for whoever still holds
		// strings decoded from them.
		old := s.chunks
		s.chunks, s.live, s.dead = nil, 0, 0
		for q, l := range s.dense {
			if l != 0 {
				enc := read(old, l).enc
				s.dense[q] = loc(appendChunk(&s.chunks, enc))
				s.live += len(enc)
			}
		}
	}
}

// summary is one encoded summary read: its strings (id, published
// instant, acn, abn, company name) and its bytes, aliasing its chunk
// (never changed once written).
type summary struct {
	str [5]string
	enc []byte
}

// read reads the summary at location l (not 0) of chunks.
func read(chunks [][]byte, l uint64) (s summary) {
	b, pos := chunks[l>>32-1], int(uint32(l))
	next := func() int {
		if c := b[pos]; c < 0x80 { // one byte: nearly every code and length
			pos++
			return int(c)
		}
		v, n := binary.Uvarint(b[pos:])
		pos += n
		return int(v)
	}
	for i := range s.str {
		if n := next(); n > 0 {
			s.str[i] = unsafe.String(&b[pos], n)
			pos += n
		}
	}
	s.enc = b[int(uint32(l)):pos]
	return s
}

// decode decodes seq's summary into n, which must be the zero Notice
// (false: none, n left so); n's pointer fields point into ptrs, and its
// strings into the slab's chunks. Fields are set one by one: copying a
// whole Notice costs a bulk write barrier and clearing fields already
// zero.
func (s *summarySlab) decode(seq int64, n *notice.Notice, ptrs *[3]string) bool {
	l := s.where(seq)
	if l == 0 {
		return false
	}
	r := read(s.chunks, l)
	n.Seq = seq
	s.decodeCodes(s.tuples[s.tupleOf[seq]], n, &ptrs[0])
	n.ID, n.PublishedAt, n.CompanyName = r.str[0], r.str[1], r.str[4]
	if ptrs[1] = r.str[2]; ptrs[1] != "" {
		n.ACN = &ptrs[1]
	}
	if ptrs[2] = r.str[3]; ptrs[2] != "" {
		n.ABN = &ptrs[2]
	}
	return true
}

// decodeCodes sets n's coded fields from codes (as a summary holds
// them); the appointment type, if any, is put in app and n points to it.
func (s *summarySlab) decodeCodes(c [7]uint64, n *notice.Notice, app *string) {
	n.PublishedDate, n.NoticeType, n.NoticeCode = s.dict[c[0]], s.dict[c[1]], s.dict[c[2]]
	n.NoticePurpose, n.State, n.Status = s.dict[c[3]], s.dict[c[4]], s.dict[c[5]]
	if c[6] != 0 {
		*app = s.dict[c[6]-1]
		n.AppointmentType = app
	}
}
