package sample

// Word lists the names, places and notice texts are built from. All names are
// invented combinations; the firm names are fictional.

var surnames = []string{
	"SMITH", "JONES", "WILLIAMS", "BROWN", "WILSON", "TAYLOR", "JOHNSON", "WHITE",
	"MARTIN", "ANDERSON", "THOMPSON", "NGUYEN", "THOMAS", "WALKER", "HARRIS", "LEE",
	"RYAN", "ROBINSON", "KELLY", "KING", "DAVIS", "WRIGHT", "EVANS", "ROBERTS",
	"GREEN", "HALL", "WOOD", "JACKSON", "CLARKE", "PATEL", "KHAN", "LEWIS",
	"JAMES", "PHILLIPS", "MITCHELL", "TRAN", "WANG", "LI", "CHEN", "ZHANG",
	"LIU", "SINGH", "SHARMA", "MURPHY", "O'BRIEN", "MCDONALD", "CAMPBELL", "STEWART",
	"MORRIS", "YOUNG", "COOK", "BAKER", "COLLINS", "BELL", "HUGHES", "EDWARDS",
	"TURNER", "HILL", "SCOTT", "ADAMS", "MOORE", "PARKER", "ALLEN", "CARTER",
	"BAILEY", "COOPER", "WARD", "KENNEDY", "FRASER", "HUNT", "GRAHAM", "GRAY",
	"REID", "ROSS", "SHAW", "SULLIVAN", "WATSON", "RICHARDSON", "ELLIS", "MARSHALL",
	"CHAPMAN", "PAPADOPOULOS", "ROSSI", "RUSSO", "COSTA", "KARAGIANNIS", "NIKOLIC", "KOWALSKI",
	"HOANG", "PHAM", "LE", "VO", "WONG", "CHAN", "HO", "LAM",
	"TAN", "LIM", "KAUR", "GUPTA", "ALI", "HASSAN", "IBRAHIM", "HADDAD",
	"KHOURY", "SANTOS", "SILVA", "FERNANDEZ", "GARCIA", "MULLER", "SCHMIDT", "JENSEN",
	"HANSEN", "DE LUCA", "VAN DER BERG", "O'CONNOR", "FITZGERALD", "GALLAGHER", "DOYLE", "QUINN",
	"BARNES", "FLETCHER", "HOWARD", "MORGAN", "PRICE", "BENNETT", "WEBB", "SIMPSON",
	"LAWSON", "DUNN", "HAYES", "BYRNE", "MCKENZIE", "MCLEAN", "BLACK", "HENDERSON",
	"ARMSTRONG", "BUTLER", "FORD", "GRANT", "HARVEY", "HOLMES", "JORDAN", "KNIGHT",
	"LANE", "MASON", "PAYNE", "PEARCE", "PORTER", "RILEY", "RUSSELL", "STEVENS",
	"WALSH", "WELLS", "WEST", "WHEELER", "ZAPPIA", "ABOUD", "NAKAMURA", "TANAKA",
}

var places = []string{
	"BAYSIDE", "COASTAL", "SOUTHERN", "NORTHERN", "EASTERN", "WESTERN", "PACIFIC", "HARBOUR",
	"SUMMIT", "RIVERINA", "GIPPSLAND", "HUNTER", "ILLAWARRA", "BAROSSA", "KIMBERLEY", "PILBARA",
	"TASMAN", "GOLDEN", "SILVER", "BLUE GUM", "IRONBARK", "WATTLE", "BANKSIA", "KOOKABURRA",
	"SOUTHERN CROSS", "RED CENTRE", "SUNSHINE", "GOLD COAST", "MORNINGTON", "YARRA", "DARLING", "MURRAY",
	"OTWAY", "FLINDERS", "CAPRICORN", "WHITSUNDAY", "MACEDON", "SWAN", "DERWENT", "TORRENS",
	"PARRAMATTA", "HAWKESBURY", "NEPEAN", "BRINDABELLA", "ARNHEM", "MALLEE", "WIMMERA", "OUTBACK",
	"EUREKA", "ANCHOR", "KEYSTONE", "PINNACLE", "HORIZON", "ZENITH", "LIBERTY", "HERITAGE",
	"PREMIER", "APEX", "TRUE NORTH", "ALPINE", "OCEANIC", "URBAN", "METRO", "COUNTRY",
}

var industries = []string{
	"CIVIL", "CONSTRUCTIONS", "BUILDING", "PLUMBING", "ELECTRICAL", "ROOFING", "CONCRETING", "EARTHMOVING",
	"TRANSPORT", "LOGISTICS", "FREIGHT", "HAULAGE", "CARPENTRY", "JOINERY", "PAINTING", "LANDSCAPING",
	"TILING", "GLAZING", "CABINETS", "KITCHENS", "HOSPITALITY", "CAFE", "CAFÉ", "RESTAURANT",
	"BAKERY", "CATERING", "FITNESS", "HEALTH", "DENTAL", "MEDICAL", "PHARMACY", "CONSULTING",
	"ACCOUNTING", "MARKETING", "MEDIA", "DIGITAL", "SOFTWARE", "TECHNOLOGY", "SECURITY", "CLEANING",
	"FACILITY SERVICES", "PROPERTY", "DEVELOPMENTS", "REALTY", "INVESTMENTS", "CAPITAL", "FINANCE", "MORTGAGE",
	"AGRICULTURE", "FARMING", "PASTORAL", "VITICULTURE", "WINES", "BREWING", "MINING", "DRILLING",
	"ENGINEERING", "FABRICATION", "STEEL", "TIMBER", "AUTOMOTIVE", "MOTORS", "SMASH REPAIRS", "TYRES",
	"MARINE", "FISHERIES", "AVIATION", "TRAVEL", "EDUCATION", "CHILDCARE", "AGED CARE", "DISABILITY SERVICES",
	"LABOUR HIRE", "RECRUITMENT", "FASHION", "APPAREL", "FURNITURE", "FLOORING", "IMPORTS", "RETAIL",
	"SOLAR", "ENERGY", "WASTE", "RECYCLING", "DEMOLITION", "SCAFFOLDING", "FORMWORK", "SURVEYING",
	"DRAFTING", "INTERIORS", "EVENTS", "ENTERTAINMENT", "HOMES", "RENOVATIONS", "POOLS", "FENCING",
}

// industryDescs describes each industry for notice texts, parallel to
// industries.
var industryDescs = []string{
	"civil works", "commercial construction", "residential building", "plumbing", "electrical contracting", "roofing", "concreting", "earthmoving",
	"road transport", "logistics", "freight forwarding", "heavy haulage", "carpentry", "joinery", "painting and decorating", "landscaping",
	"tiling", "glazing", "cabinet making", "kitchen manufacturing", "hospitality", "cafe", "café", "restaurant",
	"bakery", "catering", "fitness centre", "allied health", "dental practice", "medical practice", "pharmacy", "management consulting",
	"accounting", "marketing", "media production", "digital agency", "software development", "IT services", "security services", "commercial cleaning",
	"facility management", "property management", "property development", "real estate", "investment", "financial services", "finance broking", "mortgage broking",
	"agricultural", "farming", "pastoral", "viticulture", "winemaking", "craft brewing", "mining services", "drilling",
	"engineering", "metal fabrication", "structural steel", "timber supply", "automotive repair", "used car dealership", "smash repair", "tyre retail",
	"marine services", "commercial fishing", "aviation services", "travel agency", "vocational training", "childcare", "aged care", "disability support",
	"labour hire", "recruitment", "fashion retail", "apparel wholesale", "furniture retail", "flooring", "import and wholesale", "retail",
	"solar installation", "energy services", "waste collection", "recycling", "demolition", "scaffolding", "formwork", "land surveying",
	"drafting", "interior design", "events management", "entertainment", "home building", "renovation", "pool construction", "fencing",
}

var groupWords = []string{
	"HOLDINGS", "GROUP", "ENTERPRISES", "SERVICES", "SOLUTIONS", "INVESTMENTS", "NOMINEES", "AUSTRALIA",
	"INTERNATIONAL", "PROJECTS", "INDUSTRIES", "PARTNERS", "VENTURES", "CORPORATION", "TRADING", "CO",
}

var syllables = []string{
	"KOR", "AVA", "ZEN", "TRIX", "LUM", "INA", "VEX", "ORA", "TAL", "ISK", "MER", "ION", "QUA", "DRA", "NEO", "LYN",
	"AXI", "BRO", "CEL", "DYN", "ELO", "FRA", "GEN", "HEX", "IRI", "JAX", "KAI", "LEX", "MIR", "NOV", "OXY", "PRO",
}

var firstNames = []string{
	"James", "John", "Michael", "David", "Andrew", "Peter", "Mark", "Paul",
	"Matthew", "Daniel", "Christopher", "Stephen", "Anthony", "Robert", "Richard", "Simon",
	"Jason", "Nicholas", "Benjamin", "Thomas", "Sarah", "Jessica", "Emma", "Rebecca",
	"Michelle", "Jennifer", "Lisa", "Amanda", "Kate", "Rachel", "Natalie", "Catherine",
	"Melissa", "Joanne", "Hannah", "Chloé", "Zoë", "José", "Renée", "Hamish",
	"Angus", "Liam", "Priya", "Wei", "Mei", "Hiroshi", "Ahmed", "Fatima",
	"Giulia", "Marco", "Dimitri", "Sean", "Declan", "Siobhan", "Bronwyn", "Kylie",
}

var firms = []string{
	"Harbourside Insolvency", "Meridian Restructuring", "Southern Cross Advisory", "Ironbark Recovery Partners",
	"Banksia Turnaround", "Coastline Insolvency Group", "Parkes & Hale Chartered Accountants", "Whitcombe Carter Restructuring",
	"Kingsgate Advisory", "Redgum Insolvency", "Bluewater Business Recovery", "Summit Restructuring & Insolvency",
	"Lachlan Partners", "Caldwell Pryor", "Eastbrook Insolvency", "Thornton Reid Advisory",
	"Mosman Rowe", "Ashgrove Recovery", "Tasman Restructuring", "Brightwater Advisory",
	"Hollis Quinn", "Calder Hughes & Co", "Westbury Insolvency", "Goldfields Recovery",
	"Capricorn Advisory", "Fremont Sinclair", "Northgate Business Recovery", "Larkin Moss",
	"Pemberton Rhodes", "Yarra Valley Insolvency", "Corrigan Vale Partners", "Ridgeway Turnaround",
}

var lenders = []string{
	"Southern Finance Pty Ltd", "Pacific Commercial Lending Ltd", "Harbour Equipment Finance Pty Ltd",
	"Great Dividing Bank Limited", "Ironstone Capital Partners Pty Ltd", "Coral Sea Credit Union Limited",
}

// stateInfo is the per-state detail used in addresses and texts.
type stateInfo struct {
	code, long, city, postcode, area string
	streets, suburbs                 []string
}

// states are the eight states and territories; stateWeights (parallel)
// weight the sample to NSW, VIC and QLD.
var states = []stateInfo{
	{"NSW", "New South Wales", "Sydney", "2000", "02",
		[]string{"George Street", "Pitt Street", "Macquarie Street", "Castlereagh Street", "Kent Street", "Clarence Street"},
		[]string{"Parramatta", "Penrith", "Liverpool", "Newcastle", "Wollongong", "Blacktown", "Chatswood", "Bankstown"}},
	{"VIC", "Victoria", "Melbourne", "3000", "03",
		[]string{"Collins Street", "Bourke Street", "Queen Street", "William Street", "Exhibition Street", "Flinders Lane"},
		[]string{"Dandenong", "Geelong", "Ballarat", "Bendigo", "Frankston", "Footscray", "Box Hill", "Werribee"}},
	{"QLD", "Queensland", "Brisbane", "4000", "07",
		[]string{"Eagle Street", "Queen Street", "Adelaide Street", "Creek Street", "Edward Street"},
		[]string{"Southport", "Ipswich", "Toowoomba", "Cairns", "Townsville", "Logan", "Caboolture", "Maroochydore"}},
	{"WA", "Western Australia", "Perth", "6000", "08",
		[]string{"St Georges Terrace", "Hay Street", "Murray Street", "Adelaide Terrace"},
		[]string{"Fremantle", "Joondalup", "Bunbury", "Midland", "Rockingham", "Kalgoorlie"}},
	{"SA", "South Australia", "Adelaide", "5000", "08",
		[]string{"King William Street", "Grenfell Street", "Flinders Street", "Pirie Street"},
		[]string{"Salisbury", "Mount Gambier", "Port Adelaide", "Glenelg", "Elizabeth", "Whyalla"}},
	{"TAS", "Tasmania", "Hobart", "7000", "03",
		[]string{"Macquarie Street", "Murray Street", "Elizabeth Street"},
		[]string{"Launceston", "Devonport", "Burnie", "Glenorchy"}},
	{"ACT", "Australian Capital Territory", "Canberra", "2601", "02",
		[]string{"London Circuit", "Northbourne Avenue", "Marcus Clarke Street"},
		[]string{"Belconnen", "Tuggeranong", "Fyshwick", "Gungahlin"}},
	{"NT", "Northern Territory", "Darwin", "0800", "08",
		[]string{"Mitchell Street", "Smith Street", "Cavenagh Street"},
		[]string{"Palmerston", "Alice Springs", "Katherine", "Casuarina"}},
}

// stateWeights are per mille and sum to 1000.
var stateWeights = []int{320, 270, 210, 90, 60, 20, 20, 20}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June",
	"July", "August", "September", "October", "November", "December"}
