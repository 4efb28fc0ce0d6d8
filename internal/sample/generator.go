package sample

import (
	"bufio"
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// Register events: what the notices did to a register company, packed as
// event<<24 | day in generator.events.
const (
	evNone uint32 = iota
	evTouched
	evEXAD
	evSOFF
	evDRGD
)

// deregShare is the target share of deregistration notices, per mille.
const deregShare = 800

// followUp is a notice scheduled for later: the next stage of a chain, or a
// replacement of a notice already published.
type followUp struct {
	due         int64 // unix seconds; emitted at the first slot at or after it
	seq         uint64
	co          int64
	k           kind
	stage       int8
	code        code
	pracs       [2]int32
	np          int8
	replaces    string // source_id of the replaced notice, "" for a chain stage
	replacedDay int32
}

type followUps []followUp

func (q followUps) Len() int { return len(q) }
func (q followUps) Less(i, j int) bool {
	if q[i].due != q[j].due {
		return q[i].due < q[j].due
	}
	return q[i].seq < q[j].seq
}
func (q followUps) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *followUps) Push(x any)   { *q = append(*q, x.(followUp)) }
func (q *followUps) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type generator struct {
	opts    Options
	r       *rand.Rand
	cs      *companies
	pool    *pool
	events  []uint32
	today   int32
	nowUnix int64

	q      followUps
	seq    uint64
	srcNum int64

	permA, permB, permJ int64
	phantomNext         int64

	line []byte
	tw   textWriter
	sum  Summary
}

func newGenerator(opts Options) *generator {
	seed := uint64(opts.Seed)
	g := &generator{opts: opts}
	g.r = rand.New(rand.NewPCG(splitmix(seed^0xA5A5), splitmix(seed^0x5A5A5A)))
	g.pool = newPool(rand.New(rand.NewPCG(splitmix(seed^0x9090), 7)))
	g.nowUnix = opts.Now.Unix()
	y, m, d := opts.Now.In(notice.Sydney).Date()
	g.today = dayOf(y, int(m), d)
	g.cs = newCompanies(seed, g.today)
	g.cs.size(opts.Companies)
	g.sum.Companies = g.cs.n
	g.events = make([]uint32, g.cs.n)
	if n := g.cs.n; n > 0 {
		a := int64(float64(n)*0.6180339887) | 1
		for gcd(a, n) != 1 {
			a++
		}
		g.permA, g.permB = a%n, g.r.Int64N(n)
	}
	g.srcNum = 8_000_000 + g.r.Int64N(100_000)
	g.tw.r = g.r
	return g
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// day is one publication day: its business hours and share of notices.
type day struct {
	day    int32
	open   int64 // 9:00 Sydney, unix seconds
	window int64 // seconds of business hours (to Now on the last day)
	weight int64
}

// days lays out the publication window: Sydney weekdays (not 25-26 December
// or 1 January) from Years before Now up to Now, 9:00 to 17:00 Sydney time,
// with density rising linearly to 2.5 times the oldest day's.
func (g *generator) days() []day {
	now := g.opts.Now.In(notice.Sydney)
	start := now.AddDate(-g.opts.Years, 0, 0)
	sy, sm, sd := start.Date()
	first := dayOf(sy, int(sm), sd) + 1
	n := int64(g.today - first + 1)
	out := make([]day, 0, n)
	for k := int64(0); k < n; k++ {
		dn := first + int32(k)
		y, m, d := civil(dn)
		wd := weekday(dn)
		if wd == 0 || wd == 6 || m == 12 && (d == 25 || d == 26) || m == 1 && d == 1 {
			continue
		}
		open := time.Date(y, time.Month(m), d, 9, 0, 0, 0, notice.Sydney).Unix()
		window := int64(8 * 3600)
		if dn == g.today {
			window = min(window, g.nowUnix-open+1)
		}
		if window <= 0 {
			continue
		}
		w := (1000 + 1500*k/n) * window / (8 * 3600)
		out = append(out, day{day: dn, open: open, window: window, weight: w})
	}
	return out
}

// writeNotices writes all notices in publication order.
func (g *generator) writeNotices(w *bufio.Writer) error {
	ds := g.days()
	var total int64
	for _, d := range ds {
		total += d.weight
	}
	N := int64(g.opts.Notices)
	if N > 0 && total == 0 {
		return nil
	}
	var cum, done int64
	var offs []int32
	for _, d := range ds {
		cum += d.weight
		upto := N * cum / total
		count := upto - done
		done = upto
		offs = offs[:0]
		for range count {
			offs = append(offs, int32(g.r.Int64N(d.window)))
		}
		slices.Sort(offs)
		for _, o := range offs {
			t := d.open + int64(o)
			if len(g.q) > 0 && g.q[0].due <= t {
				f := heap.Pop(&g.q).(followUp)
				g.followUp(&f, t, d.day)
			} else {
				g.fresh(t, d.day)
			}
			if _, err := w.Write(g.line); err != nil {
				return err
			}
		}
	}
	return nil
}

// fresh writes a notice that starts something: an ASIC or voluntary
// deregistration, or the first notice of an external administration. The
// deregistration share is steered towards 80%.
func (g *generator) fresh(t int64, dn int32) {
	r := g.r
	deficit := (deregShare*(g.sum.Notices+1)+500)/1000 - g.sum.DeregistrationNotices
	p := min(max(880+20*deficit, 300), 995)
	co := g.pickCompany(dn)
	if int64(r.IntN(1000)) < p {
		cd := cADD
		if r.IntN(100) < 25 {
			cd = cVDR
		}
		g.emit(t, dn, co, kCourtApp, cd, [2]int32{}, 0, "", -1)
		return
	}
	v := r.IntN(kindWeightTotal)
	k := kCourtApp
	for kk := range kinds {
		if v < kinds[kk].weight {
			k = kind(kk)
			break
		}
		v -= kinds[kk].weight
	}
	f := followUp{co: co, k: k, code: kinds[k].stages[0].code}
	g.choosePracs(&f)
	g.emitStage(&f, t, dn)
}

// choosePracs picks the practitioners of a chain when its kind needs them
// and it has none yet.
func (g *generator) choosePracs(f *followUp) {
	info := &kinds[f.k]
	if info.maxPracs == 0 || f.np > 0 {
		return
	}
	n := 1
	if info.maxPracs > 1 && g.r.IntN(100) < 45 {
		n = 2
	}
	st := g.cs.load(f.co).state
	pr, got := g.pool.choose(g.r, st, n)
	f.pracs, f.np = pr, int8(got)
}

// followUp writes a scheduled notice.
func (g *generator) followUp(f *followUp, t int64, dn int32) {
	if f.replaces != "" {
		g.emit(t, dn, f.co, f.k, f.code, f.pracs, int(f.np), f.replaces, f.replacedDay)
		return
	}
	st := kinds[f.k].stages[f.stage]
	if st.switches {
		f.k, f.stage = st.to, 0
		g.choosePracs(f)
	}
	g.emitStage(f, t, dn)
}

// emitStage writes a chain notice, maybe schedules its replacement, and
// schedules the chain's next stage.
func (g *generator) emitStage(f *followUp, t int64, dn int32) {
	r := g.r
	src := g.emit(t, dn, f.co, f.k, f.code, f.pracs, int(f.np), "", -1)
	if f.code != cDRL && r.IntN(1000) < 25 {
		rep := *f
		rep.replaces, rep.replacedDay = src, dn
		rep.due = t + int64(1+r.IntN(10))*86400
		g.push(rep)
	}
	stages := kinds[f.k].stages
	for j := int(f.stage) + 1; j < len(stages); j++ {
		st := stages[j]
		if st.after != 0 && st.after != f.code {
			continue
		}
		if r.IntN(100) < st.pct {
			next := *f
			next.stage, next.code = int8(j), st.code
			next.due = t + int64(st.min+r.IntN(st.max-st.min+1))*86400
			g.push(next)
			return
		}
	}
}

func (g *generator) push(f followUp) {
	g.seq++
	f.seq = g.seq
	heap.Push(&g.q, f)
}

// pickCompany chooses the company a fresh notice is about: a register
// company with no notices yet, registered and not renamed in the last 90
// days, or (3%, or when none is found) a company the register lacks.
// Register companies are visited in a fixed permutation, so each is picked
// at most once.
func (g *generator) pickCompany(dn int32) int64 {
	n := g.cs.n
	if n > 0 && g.r.IntN(1000) >= 30 {
		for range 8 {
			i := (g.permA*(g.permJ%n) + g.permB) % n
			g.permJ++
			if g.events[i] != evNone {
				continue
			}
			c := g.cs.core(i)
			if c.base != regREGD || c.lastStart()+90 > dn {
				continue
			}
			return i
		}
	}
	g.phantomNext++
	return n + g.phantomNext - 1
}

// emit writes one notice into g.line and returns its source_id.
func (g *generator) emit(t int64, dn int32, co int64, k kind, cd code, pracs [2]int32, np int, replaces string, replacedDay int32) string {
	r := g.r
	c := g.cs.load(co)
	nt := &noticeTypes[cd]
	dereg := nt.purpose == purposeDeregistration

	g.srcNum += 1 + r.Int64N(5)
	var srcBuf [16]byte
	src := srcBuf[:0]
	src = append(src, '2', byte('A'+g.srcNum/10_000_000%26))
	num := g.srcNum % 10_000_000
	for p := int64(1_000_000); p > 0; p /= 10 {
		src = append(src, byte('0'+num/p%10))
	}
	sourceID := string(src)

	// Which identifiers the notice carries.
	showACN, showABN := true, false
	v := r.IntN(100)
	switch {
	case !c.inRegister && v < 10:
		showACN = false
	case !c.inRegister && v < 20:
		showACN, showABN = false, true
	case !c.inRegister && v < 80:
		showABN = true
	case !c.inRegister:
	case c.abn == "":
	case v < 78:
		showABN = true
	case v < 93:
	default:
		showACN, showABN = false, true
	}
	acn := c.acn
	if showACN && r.IntN(1000) < 10 {
		acn = corruptACN(acn, r)
		g.sum.BadACNNotices++
	}

	// The company name as the notice gives it.
	name := c.current()
	info := &kinds[k]
	if !dereg && cd != cWUA {
		if info.suffixPct > 0 && r.IntN(100) < info.suffixPct {
			if np > 1 {
				name += info.suffix[1]
			} else {
				name += info.suffix[0]
			}
		}
		if c.trust != "" && r.IntN(100) < 80 {
			name += " ATF " + c.trust
		} else if c.tradingAs != "" && r.IntN(100) < 80 {
			name += " trading as " + c.tradingAs
		}
	}

	x := noticeCtx{c: c, name: name, k: k, code: cd, day: dn, np: np, replacedDay: replacedDay}
	if dereg {
		x.np = 0
	}
	for p := range x.np {
		x.pracs[p] = &g.pool.all[pracs[p]]
	}
	var identBuf [24]byte
	id := identBuf[:0]
	switch {
	case showACN:
		id = append(id, "ACN "...)
		id = append(id, acn[0:3]...)
		id = append(id, ' ')
		id = append(id, acn[3:6]...)
		id = append(id, ' ')
		id = append(id, acn[6:9]...)
	case showABN:
		id = append(id, "ABN "...)
		id = append(id, c.abn[0:2]...)
		id = append(id, ' ')
		id = append(id, c.abn[2:5]...)
		id = append(id, ' ')
		id = append(id, c.abn[5:8]...)
		id = append(id, ' ')
		id = append(id, c.abn[8:11]...)
	}
	x.ident = string(id)
	g.tw.b = g.tw.b[:0]
	g.tw.write(&x)

	status := info.status
	switch cd {
	case cADD, cVDR:
		status = statusSoff
	case cDRL:
		status = statusDeregd
	case cCTA:
		status = statusRegistered
	}

	b := g.line[:0]
	b = append(b, `{"source_id":"`...)
	b = append(b, sourceID...)
	b = append(b, `","source_url":"https://publishednotices.asic.gov.au/browsesearch-notices/notice-details/`...)
	b = appendSlug(b, name)
	b = append(b, '/')
	b = append(b, sourceID...)
	b = append(b, `","published_at":"`...)
	b = appendTimestamp(b, t)
	b = append(b, `","acn":`...)
	if showACN {
		b = appendJSONString(b, acn)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"abn":`...)
	if showABN {
		b = appendJSONString(b, c.abn)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"company_name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"notice_type":`...)
	b = appendJSONString(b, nt.title)
	b = append(b, `,"notice_code":"`...)
	b = append(b, nt.code...)
	b = append(b, `","notice_purpose":"`...)
	b = append(b, nt.purpose...)
	b = append(b, `","appointment_type":`...)
	if dereg || info.appointment == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, info.appointment)
	}
	b = append(b, `,"state":"`...)
	b = append(b, states[c.state].code...)
	b = append(b, `","status":"`...)
	b = append(b, status...)
	b = append(b, `","text":`...)
	b = appendJSONBytes(b, g.tw.b)
	b = append(b, `,"practitioners":[`...)
	for p := range x.np {
		if p > 0 {
			b = append(b, ',')
		}
		pr := x.pracs[p]
		b = append(b, `{"name":`...)
		b = appendJSONString(b, pr.name)
		b = append(b, `,"firm":`...)
		b = appendJSONString(b, firms[pr.firm])
		b = append(b, `,"role":`...)
		b = appendJSONString(b, info.title)
		b = append(b, '}')
	}
	b = append(b, `],"replaces":`...)
	if replaces != "" {
		b = appendJSONString(b, notice.IDFor(replaces))
		g.sum.ReplacementNotices++
	} else {
		b = append(b, "null"...)
	}
	b = append(b, "}\n"...)
	g.line = b

	g.sum.Notices++
	if dereg {
		g.sum.DeregistrationNotices++
	}
	if !c.inRegister {
		g.sum.UnregisteredNotices++
	} else if replaces == "" {
		g.record(co, cd, k, dn)
	}
	return sourceID
}

// record notes what a notice did to a register company, for its register
// row.
func (g *generator) record(co int64, cd code, k kind, dn int32) {
	ev := evNone
	switch {
	case cd == cADD || cd == cVDR:
		ev = evSOFF
	case cd == cDRL:
		ev = evDRGD
	case cd == cCTA || cd == cWUA:
		ev = evTouched
	case noticeTypes[cd].purpose == purposeAppointment:
		ev = evEXAD
	}
	if ev == evNone {
		if g.events[co] == evNone {
			g.events[co] = evTouched<<24 | uint32(dn)
		}
		return
	}
	g.events[co] = ev<<24 | uint32(dn)
}
