//! A compiled kernel policy (`policy.NN`) read directly: its types,
//! aliases, attributes, classes, booleans and allow rules — what a store
//! build asks of the store's policy and of the policy it predicts.
//!
//! It reads the binary format libsepol writes (kernel policies of versions
//! 24 to 35) without libsepol or setools, in tens of milliseconds where a
//! setools session spends about a second importing, loading and walking
//! every rule in Python. The tests hold each answer to setools' on
//! Debian's and Fedora's policies: the allow rules are rendered exactly as
//! `sesearch -A` prints them (conditions in its infix form), so whatever
//! reads `sesearch` output reads these the same.
//!
//! Every count is checked against the bytes left before anything is
//! allocated for it: a truncated or hostile file is an error naming the
//! byte offset, never a panic or an allocation of its choosing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::setools::AllowLine;

/// The policy file could not be read or is not a kernel policy this
/// reader knows.
#[derive(Debug, thiserror::Error)]
pub enum KernelPolicyError {
    /// The I/O error is part of the message, not a `source()`.
    #[error("cannot read {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {format}")]
    Format { path: PathBuf, format: FormatError },
}

/// Where and why the bytes are not a kernel policy this reader knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {what}")]
pub struct FormatError {
    pub offset: usize,
    pub what: String,
}

const POLICYDB_MAGIC: u32 = 0xf97c_ff8c;
const VERSION_BOUNDARY: u32 = 24;
const VERSION_FILENAME_TRANS: u32 = 25;
const VERSION_ROLETRANS: u32 = 26;
const VERSION_NEW_OBJECT_DEFAULTS: u32 = 27;
const VERSION_DEFAULT_TYPE: u32 = 28;
const VERSION_CONSTRAINT_NAMES: u32 = 29;
const VERSION_XPERMS_IOCTL: u32 = 30;
const VERSION_COMP_FTRANS: u32 = 33;
const VERSION_NEVERAUDIT: u32 = 35;
/// The versions read here: attributes are in the type table from 24 on.
pub const VERSIONS: std::ops::RangeInclusive<u32> = VERSION_BOUNDARY..=VERSION_NEVERAUDIT;

const SYMTABS: u32 = 8;
const TYPE_PROPERTY_PRIMARY: u32 = 0x1;
const TYPE_PROPERTY_ATTRIBUTE: u32 = 0x2;
const CEXPR_NAMES: u32 = 5;
const AVTAB_ALLOWED: u16 = 0x0001;
const AVTAB_AV: u16 = 0x0007;
const AVTAB_TYPE: u16 = 0x0070;
const AVTAB_XPERMS: u16 = 0x0700;
const AVTAB_ENABLED: u16 = 0x8000;
const COND_BOOL: u32 = 1;
const COND_NOT: u32 = 2;
const COND_NEQ: u32 = 7;
/// Object contexts: initial SIDs, filesystems, ports, network interfaces,
/// nodes, fs_use, IPv6 nodes, InfiniBand partition keys and end ports.
const OCON_KINDS: u32 = 9;

/// One entry of the type table: a type or an attribute.
#[derive(Debug, Clone)]
struct TypeEntry {
    name: String,
    attribute: bool,
}

#[derive(Debug, Clone, Default)]
struct Class {
    name: String,
    /// Permission names by bit (value - 1), the common's included.
    perms: Vec<Option<String>>,
}

/// One allow rule of the access vector table or of a conditional's branch.
#[derive(Debug, Clone, Copy)]
struct Allow {
    source: u32,
    target: u32,
    class: u32,
    perms: u32,
    /// The conditional (index) and the branch the rule is in.
    condition: Option<(usize, bool)>,
}

/// A node of a conditional's postfix expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CondNode {
    Boolean(u32),
    Not,
    /// `||`, `&&`, `^`, `==`, `!=`
    Binary(u32),
}

/// A compiled kernel policy, as far as a store build asks about it.
#[derive(Debug, Clone)]
pub struct KernelPolicy {
    /// By value - 1; `None` for a value the table left unused.
    types: Vec<Option<TypeEntry>>,
    /// Alias name → type value.
    aliases: Vec<(String, u32)>,
    classes: Vec<Option<Class>>,
    /// By value - 1: name, default state.
    booleans: Vec<Option<(String, bool)>>,
    /// By type value - 1: the attribute values the type holds.
    type_attributes: Vec<Vec<u32>>,
    allows: Vec<Allow>,
    conditions: Vec<Vec<CondNode>>,
}

/// Which allow rules [`KernelPolicy::allow_lines`] answers with, as
/// `sesearch -A` filters them.
#[derive(Debug, Clone, Default)]
pub struct RuleFilter<'a> {
    /// Rules whose target is one of these types or an attribute holding
    /// one (`-rt -t '^(a|b)$'`); `None`: any target.
    pub targets: Option<&'a [&'a str]>,
    /// Rules on one of these classes (`-c`); `None`: any class.
    pub classes: Option<&'a [&'a str]>,
    /// Rules granting at least one of these permissions (`-p`).
    pub perms: Option<&'a [&'a str]>,
}

impl KernelPolicy {
    /// Reads the policy file at `path`.
    pub fn read(path: &Path) -> Result<KernelPolicy, KernelPolicyError> {
        let bytes = std::fs::read(path).map_err(|error| KernelPolicyError::Io {
            path: path.to_owned(),
            error,
        })?;
        KernelPolicy::parse(&bytes).map_err(|format| KernelPolicyError::Format {
            path: path.to_owned(),
            format,
        })
    }

    /// Reads a kernel policy from its bytes.
    pub fn parse(bytes: &[u8]) -> Result<KernelPolicy, FormatError> {
        Reader::new(bytes).policy()
    }

    /// What libsepol checks too: every value a rule, an alias or a
    /// condition names is in its table, and every condition is a whole
    /// postfix expression.
    fn check(&self) -> Result<(), String> {
        let in_table = |value: u32, len: usize| (1..=len).contains(&(value as usize));
        for (alias, value) in &self.aliases {
            if !in_table(*value, self.types.len()) || self.type_name(*value).is_none() {
                return Err(format!(
                    "alias {alias} names type value {value}, not in the table"
                ));
            }
        }
        for rule in &self.allows {
            if self.type_name(rule.source).is_none()
                || self.type_name(rule.target).is_none()
                || !in_table(rule.class, self.classes.len())
                || self.classes[rule.class as usize - 1].is_none()
            {
                return Err(format!(
                    "an allow rule names values ({}, {}, class {}) not in their tables",
                    rule.source, rule.target, rule.class
                ));
            }
        }
        for (index, nodes) in self.conditions.iter().enumerate() {
            let mut depth = 0usize;
            for node in nodes {
                depth = match *node {
                    CondNode::Boolean(value) => {
                        if !in_table(value, self.booleans.len())
                            || self.booleans[value as usize - 1].is_none()
                        {
                            return Err(format!("condition {index} names boolean value {value}"));
                        }
                        depth + 1
                    }
                    CondNode::Not if depth >= 1 => depth,
                    CondNode::Binary(_) if depth >= 2 => depth - 1,
                    _ => return Err(format!("condition {index} is not a postfix expression")),
                };
            }
            if depth != 1 {
                return Err(format!("condition {index} is not a postfix expression"));
            }
        }
        Ok(())
    }

    fn type_name(&self, value: u32) -> Option<&str> {
        let entry = self.types.get(value.checked_sub(1)? as usize)?.as_ref()?;
        Some(&entry.name)
    }

    /// Each type (attributes left out) with the attributes it holds.
    pub fn types(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.types.iter().enumerate().filter_map(|(index, entry)| {
            let entry = entry.as_ref().filter(|e| !e.attribute)?;
            let held = self.type_attributes[index]
                .iter()
                .filter_map(|&a| self.type_name(a))
                .collect();
            Some((entry.name.as_str(), held))
        })
    }

    /// Each alias with the type it names.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases
            .iter()
            .filter_map(|(alias, value)| Some((alias.as_str(), self.type_name(*value)?)))
    }

    /// Each attribute with its member types.
    pub fn attributes(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        let mut attributes: BTreeMap<&str, BTreeSet<&str>> = self
            .types
            .iter()
            .flatten()
            .filter(|e| e.attribute)
            .map(|e| (e.name.as_str(), BTreeSet::new()))
            .collect();
        for (name, held) in self.types() {
            for attribute in held {
                attributes.entry(attribute).or_default().insert(name);
            }
        }
        attributes
    }

    /// Each class with every permission it has (its common's included).
    pub fn classes(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.classes.iter().flatten().map(|class| {
            (
                class.name.as_str(),
                class.perms.iter().flatten().map(String::as_str).collect(),
            )
        })
    }

    /// Each boolean with its default state.
    pub fn booleans(&self) -> impl Iterator<Item = (&str, bool)> {
        self.booleans
            .iter()
            .flatten()
            .map(|(name, state)| (name.as_str(), *state))
    }

    /// The allow rules `filter` keeps, each as `sesearch -A` prints it,
    /// sorted as it sorts them.
    pub fn allow_lines(&self, filter: &RuleFilter<'_>) -> Vec<AllowLine> {
        let targets: Option<BTreeSet<u32>> = filter.targets.map(|names| self.targets_of(names));
        let classes: Option<BTreeSet<u32>> = filter.classes.map(|names| {
            self.classes
                .iter()
                .enumerate()
                .filter(|(_, c)| c.as_ref().is_some_and(|c| names.contains(&c.name.as_str())))
                .map(|(index, _)| index as u32 + 1)
                .collect()
        });
        let mut lines: Vec<AllowLine> = self
            .allows
            .iter()
            .filter(|rule| targets.as_ref().is_none_or(|t| t.contains(&rule.target)))
            .filter(|rule| classes.as_ref().is_none_or(|c| c.contains(&rule.class)))
            .filter_map(|rule| self.line(rule))
            .filter(|line| {
                filter
                    .perms
                    .is_none_or(|wanted| wanted.iter().any(|p| line.perms.contains(*p)))
            })
            .collect();
        lines.sort_by(|a, b| a.text.cmp(&b.text));
        lines
    }

    /// The values of the named types and of every attribute holding one.
    fn targets_of(&self, names: &[&str]) -> BTreeSet<u32> {
        let mut values = BTreeSet::new();
        for (index, entry) in self.types.iter().enumerate() {
            let Some(entry) = entry.as_ref().filter(|e| !e.attribute) else {
                continue;
            };
            if names.contains(&entry.name.as_str()) {
                values.insert(index as u32 + 1);
                values.extend(self.type_attributes[index].iter().copied());
            }
        }
        values
    }

    fn line(&self, rule: &Allow) -> Option<AllowLine> {
        let source = self.type_name(rule.source)?;
        let target = self.type_name(rule.target)?;
        let class = self
            .classes
            .get(rule.class.checked_sub(1)? as usize)?
            .as_ref()?;
        let perms: BTreeSet<String> = (0..32)
            .filter(|bit| rule.perms & (1 << bit) != 0)
            .filter_map(|bit| class.perms.get(bit).cloned().flatten())
            .collect();
        let mut text = format!("allow {source} {target}:{} ", class.name);
        match perms.len() {
            0 => return None,
            1 => text.push_str(perms.first()?),
            _ => {
                text.push_str("{ ");
                text.push_str(&perms.iter().cloned().collect::<Vec<_>>().join(" "));
                text.push_str(" }");
            }
        }
        text.push(';');
        let condition = match rule.condition {
            None => None,
            Some((index, when)) => {
                let expression = self.expression(&self.conditions[index])?;
                text.push_str(&format!(
                    " [ {expression} ]:{}",
                    if when { "True" } else { "False" }
                ));
                Some((expression, when))
            }
        };
        Some(AllowLine {
            source: source.to_owned(),
            target: target.to_owned(),
            class: class.name.clone(),
            perms,
            when: condition.as_ref().is_none_or(|(_, when)| *when),
            condition: condition.map(|(expression, _)| expression),
            text,
        })
    }

    /// The postfix expression in setools' infix form: parentheses around
    /// a binary operation unless the operator before it binds tighter,
    /// around a negated subexpression, the second operand first.
    fn expression(&self, nodes: &[CondNode]) -> Option<String> {
        enum Item {
            Name(String),
            Expr(Vec<String>),
        }
        fn flatten(item: Item, out: &mut Vec<String>) {
            match item {
                Item::Name(name) => out.push(name),
                Item::Expr(words) => out.extend(words),
            }
        }
        let mut stack: Vec<Item> = Vec::new();
        let mut previous = 5;
        for node in nodes {
            match *node {
                CondNode::Boolean(value) => {
                    let (name, _) = self
                        .booleans
                        .get(value.checked_sub(1)? as usize)?
                        .as_ref()?;
                    stack.push(Item::Name(name.clone()));
                }
                CondNode::Not => {
                    let operand = stack.pop()?;
                    let mut words = vec!["!".to_owned()];
                    match operand {
                        Item::Name(name) => words.push(name),
                        Item::Expr(inner) => {
                            words.push("(".to_owned());
                            words.extend(inner);
                            words.push(")".to_owned());
                        }
                    }
                    stack.push(Item::Expr(words));
                    previous = 5;
                }
                CondNode::Binary(kind) => {
                    let (operator, precedence) = match kind {
                        3 => ("||", 1),
                        4 => ("&&", 3),
                        5 => ("^", 2),
                        6 => ("==", 4),
                        _ => ("!=", 4),
                    };
                    let first = stack.pop()?;
                    let second = stack.pop()?;
                    let parenthesised = previous <= precedence;
                    let mut words = Vec::new();
                    if parenthesised {
                        words.push("(".to_owned());
                    }
                    flatten(first, &mut words);
                    words.push(operator.to_owned());
                    flatten(second, &mut words);
                    if parenthesised {
                        words.push(")".to_owned());
                    }
                    stack.push(Item::Expr(words));
                    previous = precedence;
                }
            }
        }
        let mut words = Vec::new();
        for item in stack {
            flatten(item, &mut words);
        }
        Some(words.join(" "))
    }
}

/// A cursor over the policy's bytes (little-endian throughout).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    version: u32,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            at: 0,
            version: 0,
        }
    }

    fn error(&self, what: impl Into<String>) -> FormatError {
        FormatError {
            offset: self.at,
            what: what.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.error(format!("cut short: {n} more bytes expected")))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, FormatError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, FormatError> {
        let b = self.take(8)?;
        let mut word = [0; 8];
        word.copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }

    fn skip_u32s(&mut self, n: usize) -> Result<(), FormatError> {
        self.take(
            n.checked_mul(4)
                .ok_or_else(|| self.error("count overflows"))?,
        )
        .map(drop)
    }

    /// A count of items each at least `item_bytes` long: refused when the
    /// bytes left cannot hold them (nothing is allocated for a lie).
    fn count(&mut self, item_bytes: usize) -> Result<usize, FormatError> {
        let count = self.u32()? as usize;
        let left = self.bytes.len() - self.at;
        if count.saturating_mul(item_bytes) > left {
            return Err(self.error(format!(
                "a count of {count} items, more than the {left} bytes left can hold (cut short or damaged)"
            )));
        }
        Ok(count)
    }

    fn string(&mut self, len: u32) -> Result<String, FormatError> {
        let start = self.at;
        let bytes = self.take(len as usize)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| FormatError {
            offset: start,
            what: "a name that is not UTF-8".to_owned(),
        })
    }

    /// An ebitmap: its set bits, each as the value it stands for (bit + 1).
    fn ebitmap(&mut self) -> Result<Vec<u32>, FormatError> {
        let map_size = self.u32()?;
        if map_size != 64 {
            return Err(self.error(format!("ebitmap map size {map_size}, not 64")));
        }
        let high_bit = self.u32()?;
        let nodes = self.count(12)?;
        let mut values = Vec::new();
        for _ in 0..nodes {
            let start = self.u32()?;
            if start % 64 != 0 || start >= high_bit {
                return Err(self.error(format!("ebitmap node at bit {start}")));
            }
            let map = self.u64()?;
            values.extend(
                (0..64)
                    .filter(|bit| map & (1 << bit) != 0)
                    .map(|bit| start + bit + 1),
            );
        }
        Ok(values)
    }

    fn skip_ebitmap(&mut self) -> Result<(), FormatError> {
        self.ebitmap().map(drop)
    }

    /// An MLS range: one or two sensitivities, then their categories.
    fn skip_range(&mut self) -> Result<(), FormatError> {
        let levels = self.u32()?;
        if !(1..=2).contains(&levels) {
            return Err(self.error(format!("an MLS range of {levels} levels")));
        }
        self.skip_u32s(levels as usize)?;
        for _ in 0..levels {
            self.skip_ebitmap()?;
        }
        Ok(())
    }

    fn skip_level(&mut self) -> Result<(), FormatError> {
        self.u32()?;
        self.skip_ebitmap()
    }

    /// user, role, type and an MLS range (written for every kernel policy).
    fn skip_context(&mut self) -> Result<(), FormatError> {
        self.skip_u32s(3)?;
        self.skip_range()
    }

    /// The whole file, in the order libsepol writes it.
    fn policy(mut self) -> Result<KernelPolicy, FormatError> {
        let ocon_kinds = self.header()?;
        let mut policy = KernelPolicy {
            types: Vec::new(),
            aliases: Vec::new(),
            classes: Vec::new(),
            booleans: Vec::new(),
            type_attributes: Vec::new(),
            allows: Vec::new(),
            conditions: Vec::new(),
        };
        self.symbols(&mut policy)?;
        self.access_vectors(&mut policy)?;
        self.skip_labelling(ocon_kinds)?;
        self.type_attributes(&mut policy)?;
        if self.at != self.bytes.len() {
            return Err(self.error("bytes after the end of the policy"));
        }
        policy.check().map_err(|what| self.error(what))?;
        Ok(policy)
    }

    /// Magic, platform, version, table sizes, capabilities and the
    /// permissive (and neveraudit) maps; the number of object context kinds.
    fn header(&mut self) -> Result<u32, FormatError> {
        if self.u32()? != POLICYDB_MAGIC {
            return Err(self.error("not a kernel policy (wrong magic number)"));
        }
        let len = self.u32()?;
        if len > 32 {
            return Err(self.error("policy string too long"));
        }
        let target = self.string(len)?;
        if target != "SE Linux" {
            return Err(self.error(format!("a policy for {target:?}, not SELinux")));
        }
        self.version = self.u32()?;
        if !VERSIONS.contains(&self.version) {
            return Err(self.error(format!(
                "policy version {} (this reader knows {} to {})",
                self.version,
                VERSIONS.start(),
                VERSIONS.end()
            )));
        }
        let _config = self.u32()?; // MLS, handle-unknown
        let symtabs = self.u32()?;
        let ocon_kinds = self.u32()?;
        if symtabs != SYMTABS || ocon_kinds > OCON_KINDS {
            return Err(self.error(format!(
                "table sizes ({symtabs}, {ocon_kinds}) of another platform"
            )));
        }
        self.skip_ebitmap()?; // policy capabilities
        self.skip_ebitmap()?; // permissive types
        if self.version >= VERSION_NEVERAUDIT {
            self.skip_ebitmap()?;
        }
        Ok(ocon_kinds)
    }

    /// The eight symbol tables: commons, classes, roles, types, users,
    /// booleans, sensitivities, categories.
    fn symbols(&mut self, policy: &mut KernelPolicy) -> Result<(), FormatError> {
        let mut commons: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
        for table in 0..SYMTABS {
            let primaries = self.u32()? as usize;
            let entries = self.count(8)?;
            match table {
                0 => {
                    for _ in 0..entries {
                        let (name, perms) = self.common()?;
                        commons.insert(name, perms);
                    }
                }
                1 => {
                    policy.classes = vec![None; primaries.min(entries)];
                    for _ in 0..entries {
                        let (value, class) = self.class(&commons)?;
                        place(&mut policy.classes, value, class, self)?;
                    }
                }
                2 => {
                    for _ in 0..entries {
                        self.role()?;
                    }
                }
                3 => {
                    policy.types = vec![None; primaries.min(entries)];
                    for _ in 0..entries {
                        let (value, primary, entry) = self.type_entry()?;
                        if primary {
                            place(&mut policy.types, value, entry, self)?;
                        } else {
                            policy.aliases.push((entry.name, value));
                        }
                    }
                }
                4 => {
                    for _ in 0..entries {
                        self.user()?;
                    }
                }
                5 => {
                    policy.booleans = vec![None; primaries.min(entries)];
                    for _ in 0..entries {
                        let value = self.u32()?;
                        let state = self.u32()?;
                        let len = self.u32()?;
                        let name = self.string(len)?;
                        place(&mut policy.booleans, value, (name, state != 0), self)?;
                    }
                }
                6 => {
                    for _ in 0..entries {
                        let len = self.u32()?;
                        let _alias = self.u32()?;
                        self.take(len as usize)?;
                        self.skip_level()?;
                    }
                }
                _ => {
                    for _ in 0..entries {
                        let len = self.u32()?;
                        self.skip_u32s(2)?;
                        self.take(len as usize)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The access vector table, then each conditional: its expression and
    /// the rules of its two branches.
    fn access_vectors(&mut self, policy: &mut KernelPolicy) -> Result<(), FormatError> {
        self.av_rules(None, &mut policy.allows)?;
        let conditionals = self.count(8)?;
        for index in 0..conditionals {
            let _state = self.u32()?;
            let nodes = self.count(8)?;
            let mut expression = Vec::with_capacity(nodes);
            for _ in 0..nodes {
                let kind = self.u32()?;
                let boolean = self.u32()?;
                expression.push(match kind {
                    COND_BOOL => CondNode::Boolean(boolean),
                    COND_NOT => CondNode::Not,
                    3..=COND_NEQ => CondNode::Binary(kind),
                    other => return Err(self.error(format!("conditional operator {other}"))),
                });
            }
            policy.conditions.push(expression);
            for branch in [true, false] {
                self.av_rules(Some((index, branch)), &mut policy.allows)?;
            }
        }
        Ok(())
    }

    /// A counted list of access vector rules; the allow rules go to `allows`.
    fn av_rules(
        &mut self,
        condition: Option<(usize, bool)>,
        allows: &mut Vec<Allow>,
    ) -> Result<(), FormatError> {
        let rules = self.count(12)?;
        for _ in 0..rules {
            if let Some(rule) = self.av_rule(condition)? {
                allows.push(rule);
            }
        }
        Ok(())
    }

    /// What lies between the rules and the type-attribute map: role
    /// transitions and allows, name-based type transitions, object
    /// contexts, genfs contexts, range transitions.
    fn skip_labelling(&mut self, ocon_kinds: u32) -> Result<(), FormatError> {
        let role_transitions = self.count(12)?;
        let per_transition = if self.version >= VERSION_ROLETRANS {
            4
        } else {
            3
        };
        self.skip_u32s(role_transitions * per_transition)?;
        let role_allows = self.count(8)?;
        self.skip_u32s(role_allows * 2)?;
        if self.version >= VERSION_FILENAME_TRANS {
            self.filename_transitions()?;
        }
        for kind in 0..ocon_kinds {
            self.object_contexts(kind)?;
        }
        self.genfs()?;
        let ranges = self.count(12)?;
        for _ in 0..ranges {
            self.skip_u32s(3)?;
            self.skip_range()?;
        }
        Ok(())
    }

    /// For each type, the attributes it holds (the type itself left out).
    fn type_attributes(&mut self, policy: &mut KernelPolicy) -> Result<(), FormatError> {
        let types = policy.types.len();
        policy.type_attributes = Vec::with_capacity(types);
        for index in 0..types {
            let own = index as u32 + 1;
            let held: Vec<u32> = self
                .ebitmap()?
                .into_iter()
                .filter(|&value| value != own)
                .filter(|&value| {
                    policy
                        .types
                        .get(value as usize - 1)
                        .and_then(Option::as_ref)
                        .is_some_and(|e| e.attribute)
                })
                .collect();
            policy.type_attributes.push(held);
        }
        Ok(())
    }

    fn common(&mut self) -> Result<(String, Vec<(u32, String)>), FormatError> {
        let len = self.u32()?;
        let _value = self.u32()?;
        let _primaries = self.u32()?;
        let perms = self.count(8)?;
        let name = self.string(len)?;
        let perms = self.perms(perms)?;
        Ok((name, perms))
    }

    fn perms(&mut self, count: usize) -> Result<Vec<(u32, String)>, FormatError> {
        let mut perms = Vec::with_capacity(count);
        for _ in 0..count {
            let len = self.u32()?;
            let value = self.u32()?;
            perms.push((value, self.string(len)?));
        }
        Ok(perms)
    }

    fn class(
        &mut self,
        commons: &BTreeMap<String, Vec<(u32, String)>>,
    ) -> Result<(u32, Class), FormatError> {
        let len = self.u32()?;
        let common_len = self.u32()?;
        let value = self.u32()?;
        let _primaries = self.u32()?;
        let perms = self.count(8)?;
        let constraints = self.u32()?;
        let name = self.string(len)?;
        let mut all = Vec::new();
        if common_len > 0 {
            let common = self.string(common_len)?;
            let inherited = commons
                .get(&common)
                .ok_or_else(|| self.error(format!("class {name} inherits unknown {common}")))?;
            all.extend(inherited.iter().cloned());
        }
        all.extend(self.perms(perms)?);
        self.constraints(constraints)?;
        let validations = self.u32()?;
        self.constraints(validations)?;
        if self.version >= VERSION_NEW_OBJECT_DEFAULTS {
            self.skip_u32s(3)?;
        }
        if self.version >= VERSION_DEFAULT_TYPE {
            self.skip_u32s(1)?;
        }
        let mut class = Class {
            name,
            perms: Vec::new(),
        };
        for (value, perm) in all {
            let bit = value
                .checked_sub(1)
                .filter(|&b| b < 32)
                .ok_or_else(|| self.error(format!("permission value {value}")))?
                as usize;
            if class.perms.len() <= bit {
                class.perms.resize(bit + 1, None);
            }
            class.perms[bit] = Some(perm);
        }
        Ok((value, class))
    }

    fn constraints(&mut self, count: u32) -> Result<(), FormatError> {
        for _ in 0..count {
            let _perms = self.u32()?;
            let nodes = self.count(12)?;
            for _ in 0..nodes {
                let kind = self.u32()?;
                self.skip_u32s(2)?;
                if kind == CEXPR_NAMES {
                    self.skip_ebitmap()?;
                    if self.version >= VERSION_CONSTRAINT_NAMES {
                        self.skip_ebitmap()?;
                        self.skip_ebitmap()?;
                        self.skip_u32s(1)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn role(&mut self) -> Result<(), FormatError> {
        let len = self.u32()?;
        self.skip_u32s(2)?; // value, bounds
        self.take(len as usize)?;
        self.skip_ebitmap()?; // dominates
        self.skip_ebitmap() // types
    }

    /// (value, primary, entry): an alias is not primary, and has the value
    /// of the type it names.
    fn type_entry(&mut self) -> Result<(u32, bool, TypeEntry), FormatError> {
        let len = self.u32()?;
        let value = self.u32()?;
        let properties = self.u32()?;
        let _bounds = self.u32()?;
        let name = self.string(len)?;
        Ok((
            value,
            properties & TYPE_PROPERTY_PRIMARY != 0,
            TypeEntry {
                name,
                attribute: properties & TYPE_PROPERTY_ATTRIBUTE != 0,
            },
        ))
    }

    fn user(&mut self) -> Result<(), FormatError> {
        let len = self.u32()?;
        self.skip_u32s(2)?; // value, bounds
        self.take(len as usize)?;
        self.skip_ebitmap()?; // roles
        self.skip_range()?;
        self.skip_level()
    }

    /// One access vector rule; `Some` for an allow rule.
    fn av_rule(&mut self, condition: Option<(usize, bool)>) -> Result<Option<Allow>, FormatError> {
        let source = self.u16()?;
        let target = self.u16()?;
        let class = self.u16()?;
        let specified = self.u16()? & !AVTAB_ENABLED;
        if specified & !(AVTAB_AV | AVTAB_TYPE | AVTAB_XPERMS) != 0 || specified.count_ones() != 1 {
            return Err(self.error(format!("access vector rule kind {specified:#x}")));
        }
        if specified & AVTAB_XPERMS != 0 {
            if self.version < VERSION_XPERMS_IOCTL {
                return Err(self.error("an extended permission rule before version 30"));
            }
            self.u8()?;
            self.u8()?;
            self.skip_u32s(8)?;
            return Ok(None);
        }
        let data = self.u32()?;
        Ok((specified == AVTAB_ALLOWED).then_some(Allow {
            source: source.into(),
            target: target.into(),
            class: class.into(),
            perms: data,
            condition,
        }))
    }

    fn filename_transitions(&mut self) -> Result<(), FormatError> {
        let count = self.count(16)?;
        for _ in 0..count {
            let len = self.u32()?;
            self.take(len as usize)?;
            if self.version < VERSION_COMP_FTRANS {
                self.skip_u32s(4)?;
                continue;
            }
            self.skip_u32s(2)?; // target type, class
            let outcomes = self.count(16)?;
            for _ in 0..outcomes {
                self.skip_ebitmap()?;
                self.skip_u32s(1)?;
            }
        }
        Ok(())
    }

    fn object_contexts(&mut self, kind: u32) -> Result<(), FormatError> {
        let count = self.count(8)?;
        for _ in 0..count {
            match kind {
                // initial SID
                0 => self.skip_u32s(1)?,
                // filesystem, network interface: a name and two contexts
                1 | 3 => {
                    let len = self.u32()?;
                    self.take(len as usize)?;
                    self.skip_context()?;
                }
                // port
                2 => self.skip_u32s(3)?,
                // node
                4 => self.skip_u32s(2)?,
                // fs_use
                5 => {
                    self.skip_u32s(1)?;
                    let len = self.u32()?;
                    self.take(len as usize)?;
                }
                // IPv6 node
                6 => self.skip_u32s(8)?,
                // InfiniBand partition key
                7 => self.skip_u32s(4)?,
                // InfiniBand end port
                _ => {
                    let len = self.u32()?;
                    self.skip_u32s(1)?;
                    self.take(len as usize)?;
                }
            }
            self.skip_context()?;
        }
        Ok(())
    }

    fn genfs(&mut self) -> Result<(), FormatError> {
        let filesystems = self.count(8)?;
        for _ in 0..filesystems {
            let len = self.u32()?;
            self.take(len as usize)?;
            let paths = self.count(8)?;
            for _ in 0..paths {
                let len = self.u32()?;
                self.take(len as usize)?;
                self.skip_u32s(1)?; // class
                self.skip_context()?;
            }
        }
        Ok(())
    }
}

/// Puts `item` at `value - 1` of a table sized from its header.
fn place<T>(
    table: &mut [Option<T>],
    value: u32,
    item: T,
    at: &Reader<'_>,
) -> Result<(), FormatError> {
    let index = value
        .checked_sub(1)
        .map(|v| v as usize)
        .filter(|&i| i < table.len())
        .ok_or_else(|| at.error(format!("symbol value {value} outside its table")))?;
    if table[index].is_some() {
        return Err(at.error(format!("symbol value {value} given twice")));
    }
    table[index] = Some(item);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_kernel_policy_with_the_offset() {
        let error = KernelPolicy::parse(b"not a policy").unwrap_err();
        assert_eq!(error.offset, 4);
        assert!(error.what.contains("magic"), "{error}");
        let error = KernelPolicy::parse(&[]).unwrap_err();
        assert!(error.what.contains("cut short"), "{error}");
    }

    /// Debian's policy (package selinux-policy-default, in `.ci/packages`).
    /// Every cut of a real policy is refused with an offset (never a
    /// panic, never an allocation the file asks for); bytes changed
    /// anywhere give an error or a policy, never a panic. Control: the
    /// whole file reads.
    #[test]
    fn cut_or_damaged_policies_are_errors_not_panics() {
        let bytes = std::fs::read(DEBIAN_POLICY).unwrap();
        assert!(KernelPolicy::parse(&bytes).is_ok());
        let step = (bytes.len() / 1500).max(1);
        for cut in (0..bytes.len()).step_by(step).chain(0..512) {
            let error = KernelPolicy::parse(&bytes[..cut]).unwrap_err();
            assert!(error.offset <= cut, "cut at {cut}: {error}");
        }
        // A fixed pseudo-random walk (no dependency): damage one byte at a
        // time, with values that make counts and lengths huge or zero.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut refused = 0;
        for round in 0..800 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state as usize) % bytes.len();
            let mut damaged = bytes.clone();
            damaged[at] = [0xff, 0x00, 0x7f, damaged[at] ^ 0x01][round % 4];
            if KernelPolicy::parse(&damaged).is_err() {
                refused += 1;
            }
        }
        assert!(refused > 0);
    }

    pub(super) const DEBIAN_POLICY: &str = "/etc/selinux/default/policy/policy.33";

    fn text(lines: &[AllowLine]) -> String {
        lines.iter().map(|l| format!("{}\n", l.text)).collect()
    }

    #[test]
    fn answers_as_sesearch_does() {
        assert_answers_as_sesearch(Path::new(DEBIAN_POLICY), "shadow_t");
    }

    /// Every allow rule, and the filtered forms a store build asks, as
    /// `sesearch` prints them, byte for byte.
    pub(super) fn assert_answers_as_sesearch(path: &Path, third: &str) {
        let policy = KernelPolicy::read(path).unwrap();
        let all = policy.allow_lines(&RuleFilter::default());
        assert!(all.len() > 10_000);
        assert!(all.iter().any(|l| l.condition.is_some()));
        assert_eq!(
            text(&all),
            crate::setools::run("sesearch", &["-A"], path).unwrap()
        );
        let transitions = policy.allow_lines(&RuleFilter {
            perms: Some(&["transition", "dyntransition"]),
            classes: Some(&["process"]),
            ..RuleFilter::default()
        });
        assert_eq!(
            text(&transitions),
            crate::setools::run(
                "sesearch",
                &["-A", "-c", "process", "-p", "transition,dyntransition"],
                path
            )
            .unwrap()
        );
        let classes = crate::store_module::PROTECTED_CLASSES;
        let on_types = policy.allow_lines(&RuleFilter {
            targets: Some(&["var_log_t", "var_lib_t", third]),
            classes: Some(&classes),
            ..RuleFilter::default()
        });
        assert!(!on_types.is_empty());
        assert_eq!(
            text(&on_types),
            crate::setools::run(
                "sesearch",
                &[
                    "-A",
                    "-rt",
                    "-t",
                    &format!("^(var_log_t|var_lib_t|{third})$"),
                    "-c",
                    &classes.join(",")
                ],
                path
            )
            .unwrap()
        );
    }
}

#[cfg(test)]
mod against_setools {
    //! The names, attributes, classes and booleans [`KernelPolicy`] reads,
    //! held to what `seinfo -x` prints for the same policy.

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    use super::KernelPolicy;

    type Sets = BTreeMap<String, BTreeSet<String>>;

    /// What `seinfo -x -t -a -c --common -b` says, read from its text.
    #[derive(Debug, Default, PartialEq)]
    struct Seinfo {
        types: Sets,
        aliases: BTreeMap<String, String>,
        attributes: Sets,
        classes: Sets,
        booleans: BTreeMap<String, bool>,
    }

    fn words(list: &str) -> BTreeSet<String> {
        list.split([',', ' ', '{', '}'])
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn seinfo(text: &str) -> Seinfo {
        let mut info = Seinfo::default();
        let mut section = "";
        let mut current = String::new();
        let mut inherits: BTreeMap<String, String> = BTreeMap::new();
        let mut commons = Sets::new();
        for line in text.lines() {
            let trimmed = line.trim().trim_end_matches(';');
            if !line.starts_with(char::is_whitespace) && trimmed.contains(':') {
                section = match trimmed.split(':').next().unwrap_or_default() {
                    "Types" => "types",
                    "Type Attributes" => "attributes",
                    "Classes" => "classes",
                    "Commons" => "commons",
                    "Booleans" => "booleans",
                    _ => "",
                };
                continue;
            }
            let mut split = trimmed.splitn(2, ' ');
            let (first, rest) = (split.next().unwrap_or(""), split.next().unwrap_or(""));
            match (section, first) {
                ("types", "type") => {
                    let (head, held) = rest.split_once(',').unwrap_or((rest, ""));
                    let (name, aliases) = head.split_once(" alias ").unwrap_or((head, ""));
                    for alias in words(aliases) {
                        info.aliases.insert(alias, name.to_owned());
                    }
                    info.types.insert(name.to_owned(), words(held));
                }
                ("attributes", "attribute") => {
                    current = rest.to_owned();
                    info.attributes.entry(current.clone()).or_default();
                }
                ("attributes", member) if !member.is_empty() && member != "<empty" => {
                    info.attributes
                        .entry(current.clone())
                        .or_default()
                        .insert(member.to_owned());
                }
                ("classes", "class") | ("commons", "common") => {
                    current = rest.to_owned();
                    let table = if section == "classes" {
                        &mut info.classes
                    } else {
                        &mut commons
                    };
                    table.entry(current.clone()).or_default();
                }
                ("classes", "inherits") => {
                    inherits.insert(current.clone(), rest.to_owned());
                }
                ("classes" | "commons", perm) if !perm.is_empty() && perm != "{" && perm != "}" => {
                    let table = if section == "classes" {
                        &mut info.classes
                    } else {
                        &mut commons
                    };
                    table
                        .entry(current.clone())
                        .or_default()
                        .insert(perm.to_owned());
                }
                ("booleans", "bool") => {
                    let (name, state) = rest.split_once(' ').unwrap_or((rest, ""));
                    info.booleans.insert(name.to_owned(), state == "true");
                }
                _ => {}
            }
        }
        for (class, common) in inherits {
            let perms = commons.get(&common).cloned().unwrap_or_default();
            info.classes.entry(class).or_default().extend(perms);
        }
        info
    }

    fn read(policy: &KernelPolicy) -> Seinfo {
        let owned = |list: Vec<&str>| list.into_iter().map(str::to_owned).collect();
        Seinfo {
            types: policy
                .types()
                .map(|(n, held)| (n.to_owned(), owned(held)))
                .collect(),
            aliases: policy
                .aliases()
                .map(|(a, t)| (a.to_owned(), t.to_owned()))
                .collect(),
            attributes: policy
                .attributes()
                .into_iter()
                .map(|(a, members)| (a.to_owned(), owned(members.into_iter().collect())))
                .collect(),
            classes: policy
                .classes()
                .map(|(c, perms)| (c.to_owned(), owned(perms)))
                .collect(),
            booleans: policy.booleans().map(|(b, s)| (b.to_owned(), s)).collect(),
        }
    }

    /// `policy` read here and by `seinfo`: the same names, aliases,
    /// attributes with their members, classes with their permissions, and
    /// booleans with their defaults.
    pub(crate) fn assert_reads_as_seinfo(path: &Path) {
        let policy = KernelPolicy::read(path).unwrap();
        let text = crate::setools::run("seinfo", &["-x", "-t", "-a", "-c", "--common", "-b"], path)
            .unwrap();
        let expected = seinfo(&text);
        let ours = read(&policy);
        assert!(expected.types.len() > 100 && !expected.aliases.is_empty());
        assert!(
            expected.booleans.values().any(|on| *on) && expected.booleans.values().any(|on| !on)
        );
        for (field, same) in [
            ("types", ours.types == expected.types),
            ("aliases", ours.aliases == expected.aliases),
            ("attributes", ours.attributes == expected.attributes),
            ("classes", ours.classes == expected.classes),
            ("booleans", ours.booleans == expected.booleans),
        ] {
            assert!(same, "{field} differ from seinfo's for {}", path.display());
        }
    }

    #[test]
    fn reads_debians_policy_as_seinfo_does() {
        assert_reads_as_seinfo(Path::new(super::tests::DEBIAN_POLICY));
    }

    /// Fedora's targeted policy with container-selinux, from the store
    /// `SEMANIFEST_FEDORA_STORE` names (a root, or a `.tar.zst` of one):
    /// read as seinfo and sesearch read it.
    #[test]
    #[allow(clippy::print_stderr)] // a skipped test says so
    fn reads_fedoras_policy_as_setools_does() {
        let Some(store) = std::env::var_os("SEMANIFEST_FEDORA_STORE") else {
            eprintln!("skipped: SEMANIFEST_FEDORA_STORE is not set (the Fedora store fixture)");
            return;
        };
        let store = Path::new(&store);
        let inside = "etc/selinux/targeted/policy/policy.33";
        let dir = tempfile::tempdir().unwrap();
        let path = if store.is_dir() {
            store.join(inside)
        } else {
            let out = std::process::Command::new("tar")
                .args(["--zstd", "-xf"])
                .arg(store)
                .arg("-C")
                .arg(dir.path())
                .arg(inside)
                .status()
                .unwrap();
            assert!(
                out.success(),
                "cannot unpack {inside} from {}",
                store.display()
            );
            dir.path().join(inside)
        };
        assert_reads_as_seinfo(&path);
        super::tests::assert_answers_as_sesearch(&path, "container_var_lib_t");
    }

    /// Control: the comparison sees a difference (a boolean's default
    /// flipped in what seinfo said).
    #[test]
    fn the_comparison_sees_a_changed_default() {
        let path = Path::new(super::tests::DEBIAN_POLICY);
        let policy = KernelPolicy::read(path).unwrap();
        let text = crate::setools::run("seinfo", &["-x", "-b"], path).unwrap();
        let mut expected = seinfo(&text);
        assert_eq!(read(&policy).booleans, expected.booleans);
        let first = expected.booleans.values_mut().next().unwrap();
        *first = !*first;
        assert_ne!(read(&policy).booleans, expected.booleans);
    }
}
