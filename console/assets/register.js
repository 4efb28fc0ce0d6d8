// Plain English for the codes of ASIC's company register (status, type,
// class, sub-class), shown with the code beside: "Under external
// administration (EXAD)".
import { h } from './dom.js';

/** CODES maps a register field to its codes' meanings. */
export const CODES = {
  status: {
    REGD: 'Registered', DRGD: 'Deregistered', EXAD: 'Under external administration', SOFF: 'Strike-off action in progress',
    NOAC: 'Not active', DISS: 'Dissolved by special act of parliament', CNCL: 'Cancelled', PROV: 'Provisional',
  },
  type: { APTY: 'Australian proprietary company', APUB: 'Australian public company', ASSN: 'Association', BUSN: 'Business name', CHAR: 'Charity', COMP: 'Community purpose', COOP: 'Co-operative society', FNOS: 'Foreign company', LTDP: 'Limited partnership', MISM: 'Managed investment scheme', NONC: 'Non-company', NRET: 'Non-registered entity', RACN: 'Registered Australian body', REBD: 'Registered body', RSVN: 'Name reservation', SOLS: 'Solicitor corporation', TRST: 'Trust' },
  class: { LMSH: 'Limited by shares', LMGT: 'Limited by guarantee', LMSG: 'Limited by shares and guarantee', UNLM: 'Unlimited', NLIA: 'No liability', NONE: 'None' },
  sub_class: {
    PROP: 'Proprietary company', PSTC: 'Proprietary superannuation trustee company', HUNT: 'Proprietary home unit company',
    PNPC: 'Proprietary non-profit company', ULSN: 'Unlisted public non-profit company', ULSS: 'Unlisted public superannuation trustee company',
    ULST: 'Unlisted public company', LIST: 'Listed public company', LISN: 'Listed public non-profit company',
    LISS: 'Listed public superannuation trustee company', NLTD: 'No liability public company', EXTO: 'External territory company', RACA: 'Registered Australian body',
  },
};

/** meaning is the plain-English meaning of a register code, or '' when the code is not known. */
export function meaning(field, code) {
  const m = CODES[field];
  return (m && typeof code === 'string' && Object.hasOwn(m, code.toUpperCase()) && m[code.toUpperCase()]) || '';
}

/** describe is a register value as text: the meaning with the code beside, or the value as it is. */
export function describe(field, code) {
  const m = meaning(field, code);
  return m ? `${m} (${code})` : String(code);
}

/** codeNode is a register value as nodes: the meaning, then the code in a mono badge. */
export function codeNode(field, code) {
  const m = meaning(field, code);
  return m ? [m, ' ', h('span', { class: 'code mono', title: `register code ${code}` }, code)] : String(code);
}
