//! The machine description as typed data, and its validation.

use super::{Faults, MachineError, NodeMode, Shape};
use serde::{Deserialize, Serialize};

/// Deadlock-free escape scheme of the torus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Escape {
    /// One bubble escape VC, dimension-ordered routing (BG/L).
    Bubble,
    /// Two escape VCs per receiver; a packet moves to the second when it
    /// crosses the dateline (the wrap link) of a dimension; dimension-ordered.
    DatelineDim,
    /// As `DatelineDim`, direction-ordered: x+, y+, z+, then x-, y-, z-.
    DatelineDir,
}

impl Escape {
    pub fn name(&self) -> &'static str {
        match self {
            Escape::Bubble => "bubble",
            Escape::DatelineDim => "dateline_dim",
            Escape::DatelineDir => "dateline_dir",
        }
    }
    pub fn escape_vcs(&self) -> usize {
        match self {
            Escape::Bubble => 1,
            _ => 2,
        }
    }
}

/// How the bubble rule charges a packet on the bubble VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum BubbleAccounting {
    FullSize,
    ActualSize,
}

/// Arbitration policy of the routers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Arbitration {
    /// Random direction / VC choice, random receiver arbitration.
    Random,
    /// Join-the-shortest-queue direction / VC choice, random receiver arbitration.
    Jsq,
    /// JSQ choice plus serve-the-longest-queue receiver arbitration on
    /// `slq_fraction` of the decisions.
    Slq,
}

impl Arbitration {
    pub fn name(&self) -> &'static str {
        match self {
            Arbitration::Random => "random",
            Arbitration::Jsq => "jsq",
            Arbitration::Slq => "slq",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    pub cpu_mhz: f64,
    pub ticks_per_cpu_cycle: u32,
    pub cpu_cycles_per_link_byte: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub cores: u32,
    pub memory_mb: u32,
    pub l1_line_bytes: u32,
    pub copy_bytes_per_cycle: f64,
    /// A reduction's local combine (two operands in, one result out), bytes
    /// of result per processor cycle.
    pub combine_bytes_per_cycle: f64,
    pub modes: Vec<NodeMode>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorusSpec {
    pub chunk_bytes: u32,
    pub max_packet_chunks: u32,
    pub hw_header_bytes: u32,
    pub sw_header_bytes: u32,
    pub trailer_bytes: u32,
    pub gap_bytes: u32,
    pub ack_bytes: u32,
    pub hop_latency_cycles: u32,
    pub dynamic_vcs: u32,
    pub vc_buffer_bytes: u32,
    pub token_bytes: u32,
    pub escape: Escape,
    pub bubble_accounting: BubbleAccounting,
    pub paths_per_receiver: u32,
    pub arbitration: Arbitration,
    pub slq_fraction: f64,
    pub token_ranges: u32,
    pub in_network_priority_fraction: f64,
    /// Bit error rate of a link: each bit of a transfer is flipped with this
    /// probability; the receiver's CRC catches it and the sender resends
    /// the packet from its retransmission buffer (0: no errors).
    #[serde(default)]
    pub link_bit_error_rate: f64,
    /// A dynamic packet that fell back to its escape move and found no
    /// tokens waits for that escape VC (false: it chooses again among the
    /// dynamic VCs whenever something changes, as the hardware arbiter
    /// does every cycle).
    #[serde(default)]
    pub escape_commit: bool,
    /// Dead nodes, `"x,y,z"` (see `machine::Faults`): they send, receive
    /// and forward nothing; ranks go on the live nodes.
    #[serde(default)]
    pub dead_nodes: Vec<String>,
    /// Dead links, `"x,y,z:dir"` (dir x+ x- y+ y- z+ z-), dead both ways;
    /// packets route around them (see `docs/torus.md`).
    #[serde(default)]
    pub dead_links: Vec<String>,
    pub injection_fifos: u32,
    pub hp_injection_fifos: u32,
    pub injection_fifo_bytes: u32,
    pub reception_fifo_bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    pub packet_read_cycles: u32,
    pub packet_write_cycles_cached: u32,
    pub packet_write_cycles_memory: u32,
    pub interrupt_cycles: u32,
    pub poll_cycles: u32,
    pub network_alignment_bytes: u32,
}

/// A point-to-point protocol of the message layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    OnePacket,
    Eager,
    AdaptiveEager,
    Rendezvous,
}

impl Protocol {
    pub const ALL: [Protocol; 4] = [Protocol::OnePacket, Protocol::Eager, Protocol::AdaptiveEager, Protocol::Rendezvous];
    pub fn name(&self) -> &'static str {
        match self {
            Protocol::OnePacket => "one_packet",
            Protocol::Eager => "eager",
            Protocol::AdaptiveEager => "adaptive_eager",
            Protocol::Rendezvous => "rendezvous",
        }
    }
    pub fn index(&self) -> usize {
        *self as usize
    }
}

impl std::str::FromStr for Protocol {
    type Err = super::UnknownName;
    fn from_str(s: &str) -> Result<Self, super::UnknownName> {
        Protocol::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| super::UnknownName::new("protocol", s, Protocol::ALL.iter().map(|p| p.name())))
    }
}

/// Software costs of the message layer, processor cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MsgLayerSpec {
    /// Metadata block of a message (source, tag, context, size), bytes.
    pub metadata_bytes: u32,
    /// Sender's work per message (send queue, state), by protocol
    /// [one_packet, eager, adaptive_eager, rendezvous].
    pub send_message_cycles: [u32; 4],
    /// Receiver's work per message (dispatch, `recvnew`, `recvdone`), by protocol.
    pub recv_message_cycles: [u32; 4],
    /// The message layer's own work per packet, on the sending core (header,
    /// send-queue bookkeeping, FIFO status check) and again on the receiving
    /// core (header decode, handler dispatch, bookkeeping); every packet
    /// pays it, data and control alike, on top of the packet layer's write
    /// and read.
    pub packet_handler_cycles: u32,
    /// Extra receiving work per adaptive-eager data packet: dynamically
    /// routed packets of a message without a known buffer arrive in any
    /// order and are tracked one by one.
    pub adaptive_packet_cycles: u32,
    /// Time the rendezvous handshake waits between the scout's arrival and
    /// the ack's departure with both cores free for other work (the
    /// advance loops' polling gaps); not core time.
    pub rendezvous_wait_cycles: u32,
    /// Handing a receive to the coprocessor as a work unit (cache flush and
    /// invalidate of the buffer, notification), on the main core.
    pub coprocessor_workunit_cycles: u32,
    /// Receive rendezvous data on the second core in coprocessor mode.
    pub coprocessor_rendezvous: bool,
    /// Per-message work of the VN-mode intra-node protocol on each side.
    pub intranode_message_cycles: u32,
    /// Progress by interrupts instead of polling (each packet arrival
    /// costs `cpu.interrupt_cycles`).
    pub interrupts: bool,
    /// Share of the realignment copy of an unaligned receive buffer that is
    /// not overlapped with the packet reads (0..1).
    pub unaligned_copy_fraction: f64,
}

/// The collective (tree) network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveSpec {
    /// Packet size, bytes (all payload).
    pub packet_bytes: u32,
    /// Wire overhead per packet, bytes.
    pub overhead_bytes: u32,
    /// Processor cycles per byte on a tree link.
    pub cycles_per_byte: f64,
    /// Latency of one tree hop, processor cycles.
    pub hop_latency_cycles: u32,
    /// Coordinates of the tree's root node.
    pub root_node: [u32; 3],
}

/// The global-interrupt barrier network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BarrierSpec {
    /// From the last node's entry to every node seeing the barrier done, ns.
    pub latency_ns: f64,
    /// Software cost of entering and of leaving the barrier, cycles.
    pub entry_cycles: u32,
    pub exit_cycles: u32,
}

/// Collective algorithms, by operation: "auto" (the default selection) or
/// an algorithm name (see `mpi::coll`, the registry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectivesSpec {
    pub barrier: String,
    pub bcast: String,
    pub reduce: String,
    pub allreduce: String,
    pub allgather: String,
    pub alltoall: String,
    pub gather: String,
    pub scatter: String,
    /// The MPI runs torus algorithms (BG/P's DCMF) where a call meets their
    /// needs, before the portable ones: an allreduce of 128 B to 32 KB on a
    /// communicator with one rank on every node runs `torus_rectangle`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub torus_algorithms: bool,
}

impl CollectivesSpec {
    pub fn get(&self, op: &str) -> Option<&str> {
        Some(match op {
            "barrier" => &self.barrier,
            "bcast" => &self.bcast,
            "reduce" => &self.reduce,
            "allreduce" => &self.allreduce,
            "allgather" => &self.allgather,
            "alltoall" => &self.alltoall,
            "gather" => &self.gather,
            "scatter" => &self.scatter,
            _ => return None,
        })
    }
}

/// MPI on the message layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiSpec {
    /// Largest message sent with the one-packet protocol, bytes.
    pub one_packet_max_bytes: u32,
    /// Largest message sent eagerly; larger ones use rendezvous, bytes.
    pub eager_max_bytes: u32,
    /// Force one protocol for every message ("auto": choose by size).
    pub protocol: String,
    /// MPI's own work per message (matching, requests, envelope), by
    /// protocol, split evenly between sender and receiver: core time.
    pub message_cycles: [u32; 4],
    /// MPI's waiting per message, by protocol: time between a message's
    /// first packet (or scout) reaching the receiver and MPI taking it up,
    /// with the cores free for other work (adaptive eager: the receiver's
    /// token; rendezvous: MPI's side of the handshake).
    pub wait_cycles: [u32; 4],
}

impl MpiSpec {
    /// The forced protocol, if any.
    pub fn forced(&self) -> Option<Protocol> {
        self.protocol.parse().ok()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    pub shape: String,
    #[serde(default)]
    pub mesh: String,
    pub mode: NodeMode,
    /// Partition shapes by size (the machine's allocation units): a run
    /// given a rank count and no shape gets the smallest that holds it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<String>,
}

/// The DMA engine (BG/P): one per node, between the torus FIFOs and memory.
/// With it the cores never touch torus packets: the engine injects what
/// their descriptors name and stores what arrives (into a memory FIFO a
/// core reads, or straight into a buffer whose byte counter it polls).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaSpec {
    /// Bytes the engine moves per processor cycle in each direction
    /// (injection and reception are separate), for network and intra-node
    /// traffic alike.
    pub bytes_per_cycle: f64,
    /// Engine time per packet or per descriptor on top of its bytes, cycles.
    pub packet_cycles: u32,
    /// A core's work to read one packet from a memory FIFO (header decode,
    /// dispatch, copy of the payload out of the FIFO), cycles.
    pub memfifo_packet_cycles: u32,
    /// A core's work to post one descriptor to its work FIFO, cycles.
    pub descriptor_cycles: u32,
    /// Descriptors a process's work FIFO holds: a process whose FIFO is
    /// full asks for an interrupt when space frees, then refills it.
    pub work_fifo_descriptors: u32,
}

/// The machine description exactly as written in TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    pub clock: ClockSpec,
    pub node: NodeSpec,
    pub torus: TorusSpec,
    pub cpu: CpuSpec,
    pub msglayer: MsgLayerSpec,
    pub mpi: MpiSpec,
    /// The collective (tree) network; absent on a machine without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collective: Option<CollectiveSpec>,
    /// The global-interrupt barrier network; absent on a machine without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<BarrierSpec>,
    /// The DMA engine; absent on a machine whose cores move the packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma: Option<DmaSpec>,
    pub collectives: CollectivesSpec,
    pub partition: PartitionSpec,
}

impl MachineSpec {
    /// The hardware components this machine has (its TOML's sections say).
    pub fn components(&self) -> Vec<super::Component> {
        use super::Component;
        let mut c = vec![Component::Torus, Component::Node];
        if self.collective.is_some() {
            c.push(Component::Collective);
        }
        if self.barrier.is_some() {
            c.push(Component::Barrier);
        }
        if self.dma.is_some() {
            c.push(Component::Dma);
        }
        c
    }
}

/// A validated machine with the values the model uses, in ticks.
#[derive(Clone, Debug)]
pub struct Machine {
    pub spec: MachineSpec,
    /// Where the machine came from (`preset bgl`, a file's name), for errors.
    pub source_name: String,
    pub shape: Shape,
    pub mode: NodeMode,
    /// Ticks per processor cycle.
    pub tick_cycle: u64,
    /// Ticks per byte on a torus link (one network cycle).
    pub tick_byte: u64,
    /// Ticks of one hop's latency.
    pub hop_latency: u64,
    /// Virtual channels per receiver: dynamic, escape (1 or 2), high priority.
    pub vcs: usize,
    /// Tokens (VC space units) of one VC.
    pub vc_tokens: u32,
    /// Tokens of one full-sized packet.
    pub full_packet_tokens: u32,
    /// Dead nodes and links of the partition.
    pub faults: Faults,
}

fn check(ok: bool, src: &str, key: &str, value: impl ToString, allowed: &str) -> Result<(), MachineError> {
    if ok {
        Ok(())
    } else {
        Err(MachineError::Invalid { source_name: src.into(), key: key.into(), value: value.to_string(), allowed: allowed.into() })
    }
}

impl Machine {
    pub fn new(spec: MachineSpec, src: &str) -> Result<Machine, MachineError> {
        let c = &spec.clock;
        check((1.0..=100_000.0).contains(&c.cpu_mhz), src, "clock.cpu_mhz", format!("{:?}", c.cpu_mhz), "1 to 100,000 MHz")?;
        check((1..=1000).contains(&c.ticks_per_cpu_cycle), src, "clock.ticks_per_cpu_cycle", c.ticks_per_cpu_cycle, "an integer from 1 to 1000")?;
        check((1..=1000).contains(&c.cpu_cycles_per_link_byte), src, "clock.cpu_cycles_per_link_byte", c.cpu_cycles_per_link_byte, "an integer from 1 to 1000")?;
        let n = &spec.node;
        check((1..=64).contains(&n.cores), src, "node.cores", n.cores, "an integer from 1 to 64")?;
        check(n.memory_mb >= 1, src, "node.memory_mb", n.memory_mb, "a positive number of MB")?;
        check(n.l1_line_bytes.is_power_of_two(), src, "node.l1_line_bytes", n.l1_line_bytes, "a power of two")?;
        check(n.copy_bytes_per_cycle > 0.0 && n.copy_bytes_per_cycle.is_finite(), src, "node.copy_bytes_per_cycle", n.copy_bytes_per_cycle, "a positive number")?;
        check(n.combine_bytes_per_cycle > 0.0 && n.combine_bytes_per_cycle.is_finite(), src, "node.combine_bytes_per_cycle", n.combine_bytes_per_cycle, "a positive number")?;
        check(!n.modes.is_empty(), src, "node.modes", "[]", "at least one node mode")?;
        let t = &spec.torus;
        check(t.chunk_bytes >= 8 && t.chunk_bytes.is_power_of_two(), src, "torus.chunk_bytes", t.chunk_bytes, "a power of two of at least 8")?;
        check((1..=64).contains(&t.max_packet_chunks), src, "torus.max_packet_chunks", t.max_packet_chunks, "an integer from 1 to 64")?;
        let max_bytes = t.chunk_bytes * t.max_packet_chunks;
        check(t.hw_header_bytes + t.sw_header_bytes < max_bytes, src, "torus.sw_header_bytes", t.sw_header_bytes, "headers smaller than the largest packet")?;
        check(t.hw_header_bytes <= t.chunk_bytes, src, "torus.hw_header_bytes", t.hw_header_bytes, "at most one chunk")?;
        check(t.trailer_bytes <= 1024, src, "torus.trailer_bytes", t.trailer_bytes, "0 to 1024")?;
        check(t.gap_bytes <= 1024, src, "torus.gap_bytes", t.gap_bytes, "0 to 1024")?;
        check(t.ack_bytes <= 1024, src, "torus.ack_bytes", t.ack_bytes, "0 to 1024")?;
        check(t.hop_latency_cycles >= 1, src, "torus.hop_latency_cycles", t.hop_latency_cycles, "at least 1 cycle")?;
        check((1..=4).contains(&t.dynamic_vcs), src, "torus.dynamic_vcs", t.dynamic_vcs, "1, 2, 3 or 4")?;
        // A packet's charge is kept in 8 bits and a VC's tokens in 16.
        check(t.token_bytes >= 1 && t.chunk_bytes % t.token_bytes == 0 && max_bytes / t.token_bytes <= 255,
            src, "torus.token_bytes", t.token_bytes,
            &format!("a divisor of torus.chunk_bytes with at most 255 tokens in a full packet ({max_bytes} bytes)"))?;
        // Entering the bubble escape VC takes room for two full packets; a
        // VC that holds one would never let a packet onto it.
        check(t.vc_buffer_bytes >= 2 * max_bytes && t.vc_buffer_bytes % t.token_bytes == 0 && t.vc_buffer_bytes <= 65536
                && t.vc_buffer_bytes / t.token_bytes <= 65535,
            src, "torus.vc_buffer_bytes", t.vc_buffer_bytes,
            &format!("a multiple of torus.token_bytes from two full packets ({}, torus.chunk_bytes x torus.max_packet_chunks x 2) to 65536, at most 65535 tokens", 2 * max_bytes))?;
        check((1..=8).contains(&t.paths_per_receiver), src, "torus.paths_per_receiver", t.paths_per_receiver, "an integer from 1 to 8")?;
        check((0.0..=1.0).contains(&t.slq_fraction), src, "torus.slq_fraction", t.slq_fraction, "a fraction from 0 to 1")?;
        check((1..=64).contains(&t.token_ranges), src, "torus.token_ranges", t.token_ranges, "an integer from 1 to 64")?;
        check((0.0..=1.0).contains(&t.in_network_priority_fraction), src, "torus.in_network_priority_fraction", t.in_network_priority_fraction, "a fraction from 0 to 1")?;
        check((0.0..=1e-3).contains(&t.link_bit_error_rate), src, "torus.link_bit_error_rate", format!("{:?}", t.link_bit_error_rate),
            "a probability per bit from 0 to 1e-3")?;
        check((1..=16).contains(&t.injection_fifos), src, "torus.injection_fifos", t.injection_fifos, "an integer from 1 to 16")?;
        check(t.hp_injection_fifos <= 8, src, "torus.hp_injection_fifos", t.hp_injection_fifos, "an integer from 0 to 8")?;
        check(t.injection_fifo_bytes >= max_bytes && t.injection_fifo_bytes <= 1 << 20, src, "torus.injection_fifo_bytes", t.injection_fifo_bytes, &format!("at least one full packet ({max_bytes}) and at most 1 MiB"))?;
        check(t.reception_fifo_bytes >= max_bytes && t.reception_fifo_bytes <= 1 << 20, src, "torus.reception_fifo_bytes", t.reception_fifo_bytes, &format!("at least one full packet ({max_bytes}) and at most 1 MiB"))?;
        let cpu = &spec.cpu;
        check(cpu.packet_read_cycles >= 1, src, "cpu.packet_read_cycles", cpu.packet_read_cycles, "at least 1")?;
        check(cpu.packet_write_cycles_cached >= 1, src, "cpu.packet_write_cycles_cached", cpu.packet_write_cycles_cached, "at least 1")?;
        check(cpu.packet_write_cycles_memory >= cpu.packet_write_cycles_cached, src, "cpu.packet_write_cycles_memory", cpu.packet_write_cycles_memory, "at least cpu.packet_write_cycles_cached")?;
        check(cpu.poll_cycles >= 1, src, "cpu.poll_cycles", cpu.poll_cycles, "at least 1")?;
        check(cpu.network_alignment_bytes.is_power_of_two(), src, "cpu.network_alignment_bytes", cpu.network_alignment_bytes, "a power of two")?;
        let ml = &spec.msglayer;
        let maxp = max_bytes - t.hw_header_bytes - t.sw_header_bytes;
        check(ml.metadata_bytes < maxp, src, "msglayer.metadata_bytes", ml.metadata_bytes, &format!(
            "must be less than the largest packet's payload, {maxp} bytes (torus.chunk_bytes {} x torus.max_packet_chunks {} \
             less torus.hw_header_bytes {} and torus.sw_header_bytes {}), so that a packet carries data: lower it or \
             allow larger packets", t.chunk_bytes, t.max_packet_chunks, t.hw_header_bytes, t.sw_header_bytes))?;
        for (key, v) in [("msglayer.send_message_cycles", &ml.send_message_cycles), ("msglayer.recv_message_cycles", &ml.recv_message_cycles), ("mpi.message_cycles", &spec.mpi.message_cycles), ("mpi.wait_cycles", &spec.mpi.wait_cycles)] {
            check(v.iter().all(|&c| c <= 10_000_000), src, key, format!("{v:?}"), "four cycle counts (one_packet, eager, adaptive_eager, rendezvous) of at most 10,000,000")?;
        }
        for (key, v) in [("msglayer.packet_handler_cycles", ml.packet_handler_cycles), ("msglayer.adaptive_packet_cycles", ml.adaptive_packet_cycles), ("msglayer.rendezvous_wait_cycles", ml.rendezvous_wait_cycles)] {
            check(v <= 10_000_000, src, key, v, "a cycle count of at most 10,000,000")?;
        }
        check((0.0..=1.0).contains(&ml.unaligned_copy_fraction), src, "msglayer.unaligned_copy_fraction", ml.unaligned_copy_fraction, "a fraction from 0 to 1")?;
        let mp = &spec.mpi;
        check(mp.one_packet_max_bytes + ml.metadata_bytes <= maxp, src, "mpi.one_packet_max_bytes", mp.one_packet_max_bytes,
            &format!("at most one packet's payload minus msglayer.metadata_bytes ({})", maxp - ml.metadata_bytes))?;
        check(mp.eager_max_bytes >= mp.one_packet_max_bytes, src, "mpi.eager_max_bytes", mp.eager_max_bytes, "at least mpi.one_packet_max_bytes")?;
        check(mp.protocol == "auto" || mp.forced().is_some(), src, "mpi.protocol", format!("{:?}", mp.protocol), "auto, one_packet, eager, adaptive_eager or rendezvous")?;
        if let Some(co) = &spec.collective {
            check(co.packet_bytes >= 8 && co.packet_bytes <= 4096, src, "collective.packet_bytes", co.packet_bytes, "8 to 4096")?;
            check(co.overhead_bytes <= 1024, src, "collective.overhead_bytes", co.overhead_bytes, "0 to 1024")?;
            check(co.cycles_per_byte > 0.0 && co.cycles_per_byte.is_finite(), src, "collective.cycles_per_byte", co.cycles_per_byte, "a positive number")?;
            check(co.hop_latency_cycles >= 1, src, "collective.hop_latency_cycles", co.hop_latency_cycles, "at least 1 cycle")?;
        }
        if let Some(b) = &spec.barrier {
            check((0.0..=1e12).contains(&b.latency_ns), src, "barrier.latency_ns", format!("{:?}", b.latency_ns), "0 to 1e12 ns")?;
        }
        if let Some(d) = &spec.dma {
            check(d.bytes_per_cycle > 0.0 && d.bytes_per_cycle <= 1024.0, src, "dma.bytes_per_cycle", d.bytes_per_cycle, "a number of bytes per cycle above 0, at most 1024")?;
            check((1..=1 << 20).contains(&d.work_fifo_descriptors), src, "dma.work_fifo_descriptors", d.work_fifo_descriptors, "1 to 1,048,576 descriptors")?;
            for (key, v) in [("dma.packet_cycles", d.packet_cycles), ("dma.memfifo_packet_cycles", d.memfifo_packet_cycles), ("dma.descriptor_cycles", d.descriptor_cycles)] {
                check(v <= 10_000_000, src, key, v, "a cycle count of at most 10,000,000")?;
            }
        }
        let p = &spec.partition;
        let shape = Shape::parse(&p.shape, &p.mesh).map_err(|e| {
            let mesh = matches!(e, super::ShapeError::MeshLetter { .. });
            MachineError::Invalid {
                source_name: src.into(),
                key: if mesh { "partition.mesh".into() } else { "partition.shape".into() },
                value: if mesh { format!("{:?}", p.mesh) } else { format!("{:?}", p.shape) },
                allowed: e.to_string(),
            }
        })?;
        check(n.modes.contains(&p.mode), src, "partition.mode", p.mode.name(),
            &format!("one of this machine's modes: {}", n.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")))?;
        // Each task of a node reads its own group of reception FIFOs (the
        // model has two) and injects into its own share of the FIFOs.
        // (With a DMA engine the engine reads and writes every FIFO.)
        let tasks = p.mode.tasks_per_node(n.cores);
        if spec.dma.is_none() {
            check(tasks <= super::RX_GROUPS as u32, src, "node.cores", n.cores,
                &format!("at most {} tasks per node in mode {} (one reception FIFO group each; this mode runs one task per core)",
                    super::RX_GROUPS, p.mode.name()))?;
            check(t.injection_fifos >= tasks, src, "torus.injection_fifos", t.injection_fifos,
                &format!("at least one per task: {tasks} in mode {}", p.mode.name()))?;
        }
        for s in &p.shapes {
            Shape::parse(s, "").map_err(|e| MachineError::Invalid {
                source_name: src.into(),
                key: "partition.shapes".into(),
                value: format!("{s:?}"),
                allowed: e.to_string(),
            })?;
        }
        let faults = Faults::parse(&t.dead_nodes, &t.dead_links, &shape, src)?;
        let tick_cycle = c.ticks_per_cpu_cycle as u64;
        let tick_byte = tick_cycle * c.cpu_cycles_per_link_byte as u64;
        let vcs = t.dynamic_vcs as usize + t.escape.escape_vcs() + 1;
        Ok(Machine {
            source_name: src.into(),
            shape,
            mode: p.mode,
            tick_cycle,
            tick_byte,
            hop_latency: t.hop_latency_cycles as u64 * tick_cycle,
            vcs,
            vc_tokens: t.vc_buffer_bytes / t.token_bytes,
            full_packet_tokens: max_bytes / t.token_bytes,
            faults,
            spec,
        })
    }

    /// Same machine, another partition shape (validated).
    pub fn with_shape(&self, shape: &str, mesh: &str) -> Result<Machine, MachineError> {
        let mut spec = self.spec.clone();
        spec.partition.shape = shape.to_string();
        spec.partition.mesh = mesh.to_string();
        Machine::new(spec, "--shape")
    }

    /// Same machine, another node mode (validated).
    pub fn with_mode(&self, mode: NodeMode) -> Result<Machine, MachineError> {
        let mut spec = self.spec.clone();
        spec.partition.mode = mode;
        Machine::new(spec, "--mode")
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }
    pub fn torus(&self) -> &TorusSpec {
        &self.spec.torus
    }
    /// Largest packet, bytes.
    pub fn max_packet_bytes(&self) -> u32 {
        self.spec.torus.chunk_bytes * self.spec.torus.max_packet_chunks
    }
    /// Payload bytes of a full packet after both headers.
    pub fn max_payload_bytes(&self) -> u32 {
        self.max_packet_bytes() - self.spec.torus.hw_header_bytes - self.spec.torus.sw_header_bytes
    }
    /// Chunks of a packet carrying `payload` bytes (plus both headers).
    pub fn chunks_for_payload(&self, payload: u32) -> u32 {
        let t = &self.spec.torus;
        (payload + t.hw_header_bytes + t.sw_header_bytes).div_ceil(t.chunk_bytes).clamp(1, t.max_packet_chunks)
    }
    /// Bytes of a packet carrying `payload` bytes: its whole chunks.
    pub fn packet_bytes_for_payload(&self, payload: u32) -> u32 {
        self.chunks_for_payload(payload) * self.spec.torus.chunk_bytes
    }
    /// Link byte-times one packet of `bytes` takes on the forward link.
    pub fn wire_bytes(&self, bytes: u32) -> u32 {
        bytes + self.spec.torus.trailer_bytes + self.spec.torus.gap_bytes
    }
    /// Ticks per network cycle (a byte-time).
    pub fn ticks_per_ncycle(&self) -> u64 {
        self.tick_byte
    }
    /// Converts ticks to processor cycles.
    pub fn cycles(&self, ticks: u64) -> f64 {
        ticks as f64 / self.tick_cycle as f64
    }
    /// Converts ticks to network cycles.
    pub fn ncycles(&self, ticks: u64) -> f64 {
        ticks as f64 / self.tick_byte as f64
    }
    /// Ticks per simulated second.
    pub fn ticks_per_second(&self) -> f64 {
        self.spec.clock.cpu_mhz * 1e6 * self.tick_cycle as f64
    }
    /// Converts ticks to microseconds.
    pub fn micros(&self, ticks: u64) -> f64 {
        self.cycles(ticks) / self.spec.clock.cpu_mhz
    }
    /// Raw link bandwidth, bytes per second.
    pub fn link_bytes_per_s(&self) -> f64 {
        self.spec.clock.cpu_mhz * 1e6 / self.spec.clock.cpu_cycles_per_link_byte as f64
    }
    /// Cores of a node.
    pub fn cores(&self) -> u32 {
        self.spec.node.cores
    }
    /// Tasks per node in the current mode.
    pub fn tasks_per_node(&self) -> u32 {
        self.mode.tasks_per_node(self.spec.node.cores)
    }
    /// The description as TOML (what a run used; goes into results).
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.spec).unwrap_or_default()
    }
}
