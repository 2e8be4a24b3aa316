import ModemAudio

/// Both stations of a ``LinkTest`` on one ALSA device in real time: each plays into it and records
/// from it (through a sound server such as PulseAudio's null sink and its monitor). This is a shared
/// half-duplex medium: each end hears itself and the other, mixed.
public final class ALSAMedium: LinkMedium {
    public let sampleRate: Int
    /// The device name.
    public let device: String
    /// Samples per step (20 ms).
    public let blockSamples: Int
    public private(set) var now: Double = 0
    public var isShared: Bool { true }

    private let phoneOut: ALSAPlayback
    private let deviceOut: ALSAPlayback
    private let phoneIn: ALSACapture
    private let deviceIn: ALSACapture
    private var samples = 0
    private var started = false

    /// Opens two playback and two capture streams on `device`.
    /// - Throws: ``AudioError`` naming the device and alsa-lib's code when it cannot be opened.
    public init(device: String, sampleRate: Int = 48000, latencyMilliseconds: Int = 100) throws {
        self.device = device
        self.sampleRate = sampleRate
        blockSamples = sampleRate / 50
        phoneIn = try ALSACapture(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds)
        deviceIn = try ALSACapture(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds)
        phoneOut = try ALSAPlayback(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds)
        deviceOut = try ALSAPlayback(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds)
    }

    deinit {
        phoneIn.close()
        deviceIn.close()
        try? phoneOut.finish()
        try? deviceOut.finish()
    }

    private func fill(_ capture: ALSACapture, _ count: Int) throws -> [Float] {
        var block = [Float](repeating: 0, count: count)
        var have = 0
        try block.withUnsafeMutableBufferPointer { p in
            while have < count {
                let n = try capture.read(into: UnsafeMutableBufferPointer(rebasing: p[have...]))
                if n == 0 { throw AudioError(.deviceFailed, subject: device, message: "capture ended") }
                have += n
            }
        }
        return block
    }

    public func step(phone: LinkStation<PhoneStateMachine>, device: LinkStation<DeviceStateMachine>) throws {
        let rate = Double(sampleRate)
        if !started {
            // Capture first (its first buffer), then a little silence ahead of the playback.
            started = true
            _ = try fill(phoneIn, blockSamples)
            _ = try fill(deviceIn, blockSamples)
            let silence = [Float](repeating: 0, count: blockSamples * 2)
            try silence.withUnsafeBufferPointer { try phoneOut.write($0); try deviceOut.write($0) }
        }
        let p = phone.output(count: blockSamples, now: now)
        let d = device.output(count: blockSamples, now: now)
        try p.samples.withUnsafeBufferPointer { try phoneOut.write($0) }
        try d.samples.withUnsafeBufferPointer { try deviceOut.write($0) }
        let heardByPhone = try fill(phoneIn, blockSamples)
        let heardByDevice = try fill(deviceIn, blockSamples)
        samples += blockSamples
        now = Double(samples) / rate
        heardByPhone.withUnsafeBufferPointer { phone.receive($0, now: now) }
        heardByDevice.withUnsafeBufferPointer { device.receive($0, now: now) }
    }
}
