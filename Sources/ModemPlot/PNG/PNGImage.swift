/// An 8-bit RGB colour.
public struct PNGColor: Sendable, Hashable {
    /// Red, green and blue, 0...255.
    public var red, green, blue: UInt8

    /// Creates a colour.
    public init(_ red: UInt8, _ green: UInt8, _ blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// Black.
    public static let black = PNGColor(0, 0, 0)
    /// White.
    public static let white = PNGColor(255, 255, 255)
}

/// A truecolour raster (8 bits per channel, RGB, rows top to bottom), with the few drawing
/// operations the spectrogram needs. Coordinates outside the image are ignored when drawing.
public struct PNGImage: Sendable, Equatable {
    /// Width in pixels (1...65535).
    public let width: Int
    /// Height in pixels (1...65535).
    public let height: Int
    /// `width × height × 3` bytes: R, G, B of each pixel, row after row.
    public private(set) var pixels: [UInt8]

    /// Creates an image filled with one colour.
    /// - Parameters:
    ///   - width: pixels, 1...65535.
    ///   - height: pixels, 1...65535.
    ///   - background: the fill colour.
    public init(width: Int, height: Int, background: PNGColor = .black) {
        precondition((1...65535).contains(width) && (1...65535).contains(height),
                     "image size \(width)×\(height) is outside 1...65535")
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        if background != .black { fill(x: 0, y: 0, width: width, height: height, color: background) }
    }

    /// The colour at (x, y); (0, 0) is the top-left corner.
    public subscript(x: Int, y: Int) -> PNGColor {
        get {
            let i = (y * width + x) * 3
            return PNGColor(pixels[i], pixels[i + 1], pixels[i + 2])
        }
        set {
            guard x >= 0, y >= 0, x < width, y < height else { return }
            let i = (y * width + x) * 3
            pixels[i] = newValue.red
            pixels[i + 1] = newValue.green
            pixels[i + 2] = newValue.blue
        }
    }

    /// Copies `other` with its top-left corner at (x, y), clipped to this image.
    public mutating func draw(_ other: PNGImage, x: Int, y: Int) {
        for row in 0..<other.height where y + row >= 0 && y + row < height {
            let x0 = max(0, x), x1 = min(width, x + other.width)
            guard x0 < x1 else { continue }
            let src = (row * other.width + (x0 - x)) * 3, dst = ((y + row) * width + x0) * 3
            pixels.replaceSubrange(dst..<(dst + (x1 - x0) * 3), with: other.pixels[src..<(src + (x1 - x0) * 3)])
        }
    }

    /// Fills a rectangle (clipped to the image).
    public mutating func fill(x: Int, y: Int, width w: Int, height h: Int, color: PNGColor) {
        let x0 = max(0, x), y0 = max(0, y), x1 = min(width, x + w), y1 = min(height, y + h)
        guard x0 < x1, y0 < y1 else { return }
        for yy in y0..<y1 {
            var i = (yy * width + x0) * 3
            for _ in x0..<x1 {
                pixels[i] = color.red
                pixels[i + 1] = color.green
                pixels[i + 2] = color.blue
                i += 3
            }
        }
    }

    /// A horizontal line from `x0` to `x1` inclusive, optionally dashed (`dash` on, `gap` off).
    public mutating func horizontalLine(y: Int, from x0: Int, to x1: Int, color: PNGColor, dash: Int = 0, gap: Int = 0) {
        guard x0 <= x1 else { return }
        for x in x0...x1 where dash == 0 || (x - x0) % (dash + gap) < dash { self[x, y] = color }
    }

    /// A vertical line from `y0` to `y1` inclusive.
    public mutating func verticalLine(x: Int, from y0: Int, to y1: Int, color: PNGColor) {
        guard y0 <= y1 else { return }
        for y in y0...y1 { self[x, y] = color }
    }

    /// The outline of a rectangle.
    public mutating func strokeRectangle(x: Int, y: Int, width w: Int, height h: Int, color: PNGColor) {
        horizontalLine(y: y, from: x, to: x + w - 1, color: color)
        horizontalLine(y: y + h - 1, from: x, to: x + w - 1, color: color)
        verticalLine(x: x, from: y, to: y + h - 1, color: color)
        verticalLine(x: x + w - 1, from: y, to: y + h - 1, color: color)
    }
}
