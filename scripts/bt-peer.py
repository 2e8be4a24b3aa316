#!/usr/bin/env python3
"""The Bumble peer of SwiftModem's Bluetooth tests (docs/bluetooth-plan.md, sections 13 and 14).

Virtual BR/EDR controllers on one Bumble LocalLink, in one process:
  A  00:1B:DC:00:00:0A  served as raw H4 over TCP on --port: our host stack drives it.
  B  00:1B:DC:00:00:0B  carries a Bumble host, the echo device "Bumble Echo": connectable,
                        discoverable, an SDP Serial Port record, RFCOMM server channel 1 echoing
                        every byte back (credit-based flow control, as Bumble does it).
     With --expose-b PORT, B is served as H4/TCP too (no Bumble host: our `modem bt device` runs
     on it) and the echo device moves to C 00:1B:DC:00:00:0C.
  --extra-devices N: Bumble devices "Echo 2", "Echo 3", ... at 00:1B:DC:00:01:02, :01:03, ...

One TCP client at a time per port (a second one is closed at once). When a client goes, its
controller's links drop (the peers see reason 0x08) and its state resets, as after HCI_Reset.

stdout (flushed line by line):
  READY port=P host_addr=00:1B:DC:00:00:0A device_addr=00:1B:DC:00:00:0B [port_b=Q echo_addr=..]
  PEER-LINK up|down address=.. [reason=0x..]      the echo device's ACL links
  PEER-DROP mode=M after=N                         --drop-after fired
  PEER-PAIR ok|failed ...                          --pair
  PEER-RFCOMM ...                                  --connect-to-host
  PEER-ANSWER type=T dlci=D cr=C [value=..] hex=..  --raw-rfcomm: each frame our host sent back
  PEER-NO-ANSWER hex=..                            --raw-rfcomm: a frame of ours unanswered in 2 s
  PEER-RAW done|error=..                           --raw-rfcomm finished
  PEER-L2CAP already closed by the host ...        the host closed RFCOMM's L2CAP channel after DISC 0

The controller subclass fills what Bumble 0.0.236's controller lacks for BR/EDR: Inquiry and its
results (events 0x02/0x22/0x2F per Write_Inquiry_Mode, with class of device and an EIR holding the
complete local name), Inquiry_Cancel, stored Write_Class_Of_Device/Write_Extended_Inquiry_Response,
Remote_Name_Request and Create_Connection answered with 0x04 (page timeout) for addresses nobody
page-scans, Reject_Connection_Request, disconnect reasons passed through, Reset dropping links,
controller-to-host ACL split at the advertised length, and Command Complete 0x01 for every
command it does not know (the stock controller stays silent).
"""

import argparse
import asyncio
import logging
import socket
import struct
import sys

from bumble import core, hci, l2cap, lmp, rfcomm, sdp
from bumble.controller import Controller
from bumble.device import Device, DeviceConfiguration
from bumble.host import Host
from bumble.link import LocalLink

log = logging.getLogger('bt-peer')

HOST_ADDRESS = '00:1B:DC:00:00:0A'
DEVICE_ADDRESS = '00:1B:DC:00:00:0B'
MOVED_ECHO_ADDRESS = '00:1B:DC:00:00:0C'
SERIAL_PORT = core.UUID.from_16_bits(0x1101)
RFCOMM_UUID = core.UUID.from_16_bits(0x0003)
PAGE_TIMEOUT_CAP = 1.0  # seconds: a virtual page timeout need not last the configured 5.12 s
INQUIRY_CAP = 1.0  # seconds: every device answers at once, so an inquiry ends after this


# A hang guard for each awaited exchange, far above the milliseconds each takes (a busy machine in
# CI runs compilers beside the tests): only a peer that never answers runs into it.
GUARD = 30.0  # seconds


def say(line):
    print(line, flush=True)


async def step(awaitable, what):
    """Awaits one exchange under the hang guard; a timeout names what was awaited."""
    try:
        return await asyncio.wait_for(awaitable, GUARD)
    except asyncio.TimeoutError:
        raise TimeoutError(f'no {what} within {GUARD:.0f} s') from None


def event(code, parameters):
    return bytes([0x04, code, len(parameters)]) + bytes(parameters)


def command_complete(opcode, return_parameters):
    return event(0x0E, bytes([1]) + struct.pack('<H', opcode) + bytes(return_parameters))


def command_status(status, opcode):
    return event(0x0F, bytes([status, 1]) + struct.pack('<H', opcode))


def public(wire):
    """A BR/EDR address from its six wire bytes (Bumble compares address types too)."""
    return hci.Address(bytes(wire), hci.Address.PUBLIC_DEVICE_ADDRESS)


def text(address):
    """"00:1B:DC:00:00:0A" (Bumble's str() adds "/P" for a public address)."""
    return address.to_string(False)


def eir_with_name(name):
    encoded = name.encode('utf-8')[:238]
    return (bytes([len(encoded) + 1, 0x09]) + encoded).ljust(240, b'\0')


class PeerController(Controller):
    """A Bumble controller with the BR/EDR gaps filled (see the module comment)."""

    def __init__(self, name, link, address, acl_length=1021, acl_count=8):
        super().__init__(name, link=link, public_address=address)
        self.acl_data_packet_length = acl_length
        self.total_num_acl_data_packets = acl_count
        self.lmp_features = (
            Controller.lmp_features & ~hci.LmpFeatureMask.BR_EDR_NOT_SUPPORTED
            | hci.LmpFeatureMask.LMP_3_SLOT_PACKETS
            | hci.LmpFeatureMask.LMP_5_SLOT_PACKETS
            | hci.LmpFeatureMask.RSSI_WITH_INQUIRY_RESULTS
            | hci.LmpFeatureMask.EXTENDED_INQUIRY_RESPONSE
            | hci.LmpFeatureMask.SECURE_SIMPLE_PAIRING_CONTROLLER_SUPPORT
        )
        self.scan_enable_hook = None  # called with the new Write_Scan_Enable value
        self.inquiry_timers = []
        self.clear_state()

    def clear_state(self):
        for timer in self.inquiry_timers:
            timer.cancel()
        self.inquiry_timers = []
        self.class_of_device = 0
        self.eir = b''
        self.inquiry_mode = 0
        self.page_timeout = 0x2000
        self.classic_scan_enable = 0

    # --- packets from the host -------------------------------------------------------------

    def on_packet(self, packet):
        if len(packet) >= 4 and packet[0] == hci.HCI_COMMAND_PACKET:
            opcode = packet[1] | packet[2] << 8
            parameters = bytes(packet[4:])
            handler = getattr(self, f'fill_{opcode:04x}', None)
            if handler is not None:
                handler(opcode, parameters, packet)
                return
            if not hasattr(self, 'on_' + hci.HCI_Command.command_name(opcode).lower()):
                log.info('%s: unknown command 0x%04x answered with 0x01', self.name, opcode)
                self.emit(command_complete(opcode, [0x01]))
                return
        if len(packet) >= 5 and packet[0] == hci.HCI_ACL_DATA_PACKET:
            length = packet[3] | packet[4] << 8
            if length > self.acl_data_packet_length:
                log.warning('%s: the host sent %d ACL bytes in one packet, more than the %d it was told',
                            self.name, length, self.acl_data_packet_length)
        self.stock(packet)

    def stock(self, packet):
        """The stock controller's handling, with malformed packets answered or logged, never raised."""
        try:
            parsed = hci.HCI_Packet.from_bytes(packet)
        except Exception:  # malformed: a command still gets an answer (invalid parameters)
            log.warning('%s: malformed packet %s', self.name, bytes(packet).hex())
            if len(packet) >= 4 and packet[0] == hci.HCI_COMMAND_PACKET:
                self.emit(command_complete(packet[1] | packet[2] << 8, [0x12]))
            return
        try:
            self.on_hci_packet(parsed)
        except Exception:  # a stock handler's failure must not stop the peer
            log.exception('%s: packet %s', self.name, bytes(packet).hex())

    def emit(self, raw):
        """Sends raw H4 bytes to the host, in order with the stock controller's own events."""
        if self.host is not None:
            asyncio.get_running_loop().call_soon(self.host.on_packet, raw)

    def later(self, delay, raw):
        asyncio.get_running_loop().call_later(delay, self.emit, raw)

    def reachable(self, address):
        """The controller at `address` when it would answer a page (page scan on, a host behind it)."""
        other = self.link.find_classic_controller(address)
        if other is None or other is self or other.host is None or not other.classic_scan_enable & 0x02:
            return None
        return other

    def page_timeout_delay(self):
        return min(self.page_timeout * 0.000625, PAGE_TIMEOUT_CAP)

    # --- link control ------------------------------------------------------------------------

    def fill_0401(self, opcode, parameters, _):  # Inquiry
        if len(parameters) != 5:
            self.emit(command_status(0x12, opcode))
            return
        if self.inquiry_timers:
            self.emit(command_status(0x0C, opcode))
            return
        self.emit(command_status(0x00, opcode))
        length, limit = parameters[3], parameters[4]
        others = sorted(
            (c for c in self.link.controllers
             if c is not self and c.host is not None and c.classic_scan_enable & 0x01),
            key=lambda c: bytes(reversed(bytes(c.public_address))),
        )
        if limit:
            others = others[:limit]
        loop = asyncio.get_running_loop()
        for index, other in enumerate(others):
            self.inquiry_timers.append(loop.call_later(0.05 + 0.02 * index, self.inquiry_result, other, index))
        end = max(min(length * 1.28, INQUIRY_CAP), 0.06 + 0.02 * len(others))
        self.inquiry_timers.append(loop.call_later(end, self.inquiry_complete))

    def inquiry_result(self, other, index):
        address = bytes(other.public_address)
        cod = struct.pack('<I', getattr(other, 'class_of_device', 0))[:3]
        rssi = (-40 - 5 * index) & 0xFF
        if self.inquiry_mode == 0:
            self.emit(event(0x02, bytes([1]) + address + bytes([0x01, 0, 0]) + cod + bytes(2)))
        elif self.inquiry_mode == 1:
            self.emit(event(0x22, bytes([1]) + address + bytes([0x01, 0]) + cod + bytes(2) + bytes([rssi])))
        else:
            eir = getattr(other, 'eir', b'')
            if not any(eir):
                eir = eir_with_name(other.local_name)
            self.emit(event(0x2F, bytes([1]) + address + bytes([0x01, 0]) + cod + bytes(2) + bytes([rssi])
                            + eir[:240].ljust(240, b'\0')))

    def inquiry_complete(self):
        self.inquiry_timers = []
        self.emit(event(0x01, [0x00]))

    def fill_0402(self, opcode, _parameters, _):  # Inquiry_Cancel: ends it without Inquiry Complete
        for timer in self.inquiry_timers:
            timer.cancel()
        self.inquiry_timers = []
        self.emit(command_complete(opcode, [0x00]))

    def fill_0405(self, opcode, parameters, packet):  # Create_Connection
        if len(parameters) != 13:
            self.emit(command_status(0x12, opcode))
            return
        address = public(parameters[0:6])
        if address in self.classic_connections:
            self.emit(command_status(0x0B, opcode))  # connection already exists
            return
        if self.reachable(address) is None:
            self.emit(command_status(0x00, opcode))
            self.later(self.page_timeout_delay(),
                       event(0x03, bytes([0x04, 0, 0]) + bytes(address) + bytes([0x01, 0x00])))
            return
        self.stock(packet)

    def fill_0406(self, opcode, parameters, packet):  # Disconnect: the peer gets our reason, we get 0x16
        if len(parameters) != 3:
            self.emit(command_status(0x12, opcode))
            return
        handle = (parameters[0] | parameters[1] << 8) & 0x0FFF
        connection = self.find_classic_connection_by_handle(handle) if handle else None
        if connection is None:
            if handle and self.find_connection_by_handle(handle) is not None:
                self.stock(packet)  # LE: stock
            else:
                self.emit(command_status(0x02, opcode))  # unknown connection identifier
            return
        self.emit(command_status(0x00, opcode))
        self.send_lmp_packet(connection.peer_address, lmp.LmpDetach(parameters[2]))
        self.on_classic_disconnected(connection.peer_address, 0x16)

    def fill_040a(self, opcode, parameters, _):  # Reject_Connection_Request
        if len(parameters) != 7:
            self.emit(command_status(0x12, opcode))
            return
        address, reason = public(parameters[0:6]), parameters[6]
        connection = self.classic_connections.get(address)
        if connection is None or connection.handle != 0:
            self.emit(command_status(0x02, opcode))
            return
        self.emit(command_status(0x00, opcode))
        del self.classic_connections[address]
        self.send_lmp_packet(address, lmp.LmpNotAccepted(lmp.Opcode.LMP_HOST_CONNECTION_REQ, reason))
        self.emit(event(0x03, bytes([reason, 0, 0]) + bytes(address) + bytes([0x01, 0x00])))

    def fill_0419(self, opcode, parameters, _):  # Remote_Name_Request
        if len(parameters) != 10:
            self.emit(command_status(0x12, opcode))
            return
        address = public(parameters[0:6])
        self.emit(command_status(0x00, opcode))
        other = self.link.find_classic_controller(address)
        if other is not None and other is not self and (
                address in self.classic_connections or self.reachable(address) is not None):
            name = other.local_name.encode('utf-8')[:248].ljust(248, b'\0')
            self.later(0.01, event(0x07, bytes([0x00]) + bytes(address) + name))
        else:
            self.later(self.page_timeout_delay(), event(0x07, bytes([0x04]) + bytes(address) + bytes(248)))

    # --- controller and baseband -----------------------------------------------------------

    def fill_0c03(self, opcode, _parameters, packet):  # Reset: links drop, settings go back to defaults
        self.drop_links(0x13)
        self.clear_state()
        self.stock(packet)

    def fill_0c18(self, opcode, parameters, _):  # Write_Page_Timeout
        if len(parameters) == 2:
            self.page_timeout = parameters[0] | parameters[1] << 8
        self.emit(command_complete(opcode, [0x00 if len(parameters) == 2 else 0x12]))

    def fill_0c1a(self, opcode, parameters, packet):  # Write_Scan_Enable (stock), then tell the hook
        self.stock(packet)
        if self.scan_enable_hook is not None and parameters:
            self.scan_enable_hook(parameters[0])

    def fill_0c24(self, opcode, parameters, _):  # Write_Class_Of_Device
        if len(parameters) == 3:
            self.class_of_device = parameters[0] | parameters[1] << 8 | parameters[2] << 16
        self.emit(command_complete(opcode, [0x00 if len(parameters) == 3 else 0x12]))

    def fill_0c45(self, opcode, parameters, _):  # Write_Inquiry_Mode
        ok = len(parameters) == 1 and parameters[0] <= 2
        if ok:
            self.inquiry_mode = parameters[0]
        self.emit(command_complete(opcode, [0x00 if ok else 0x12]))

    def fill_0c52(self, opcode, parameters, _):  # Write_Extended_Inquiry_Response
        ok = len(parameters) == 241
        if ok:
            self.eir = parameters[1:]
        self.emit(command_complete(opcode, [0x00 if ok else 0x12]))

    # --- the link side -----------------------------------------------------------------------

    def on_lmp_packet(self, sender_address, packet):
        if isinstance(packet, lmp.LmpDetach):  # stock: always 0x13 whatever the peer said
            self.on_classic_disconnected(sender_address, packet.error_code)
            return
        super().on_lmp_packet(sender_address, packet)

    def on_classic_connection_complete(self, peer_address, status):
        super().on_classic_connection_complete(peer_address, status)
        if status != 0:  # stock keeps the failed attempt as a connection with handle 0
            self.classic_connections.pop(peer_address, None)

    def on_link_acl_data(self, sender_address, transport, data):
        if transport != core.PhysicalTransport.BR_EDR:
            super().on_link_acl_data(sender_address, transport, data)
            return
        connection = self.classic_connections.get(sender_address)
        if connection is None:
            return
        step = max(1, self.acl_data_packet_length)
        for offset in range(0, max(len(data), 1), step):
            chunk = data[offset:offset + step]
            flags = 0x2000 if offset == 0 else 0x1000  # PB 0b10 first, 0b01 continuing
            self.emit(struct.pack('<BHH', hci.HCI_ACL_DATA_PACKET, connection.handle | flags, len(chunk)) + chunk)

    def drop_links(self, reason):
        """Ends every BR/EDR link of this controller without telling its own host; the peers get `reason`."""
        for address, connection in list(self.classic_connections.items()):
            other = self.link.find_classic_controller(address)
            if other is not None:
                if connection.handle != 0:
                    other.on_classic_disconnected(self.public_address, reason)
                elif connection.role == hci.Role.PERIPHERAL:  # an incoming page nobody answered
                    self.send_lmp_packet(address, lmp.LmpNotAccepted(lmp.Opcode.LMP_HOST_CONNECTION_REQ, 0x10))
        self.classic_connections.clear()
        self.classic_pending_commands.clear()


def link_loss(first, second_address):
    """Both ends report Disconnection Complete 0x08 (connection timeout); nothing goes on the air."""
    second = first.link.find_classic_controller(second_address)
    first.on_classic_disconnected(second_address, 0x08)
    if second is not None:
        second.on_classic_disconnected(first.public_address, 0x08)


class H4Server:
    """Serves one controller as raw H4 over TCP on 127.0.0.1, one client at a time."""

    def __init__(self, controller, on_client=None):
        self.controller = controller
        self.on_client = on_client
        self.writer = None

    async def start(self, port):
        server = await asyncio.start_server(self.serve, '127.0.0.1', port)
        return server.sockets[0].getsockname()[1]

    def on_packet(self, packet):  # the controller's host sink
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(packet)

    async def serve(self, reader, writer):
        if self.writer is not None:
            log.warning('%s: a second client, closed (one at a time)', self.controller.name)
            writer.close()
            return
        self.writer = writer
        writer.get_extra_info('socket').setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.controller.host = self
        if self.on_client is not None:
            self.on_client()
        try:
            while True:
                indicator = (await reader.readexactly(1))[0]
                if indicator == 0x01:
                    header = await reader.readexactly(3)
                    length = header[2]
                elif indicator == 0x02:
                    header = await reader.readexactly(4)
                    length = header[2] | header[3] << 8
                elif indicator == 0x03:
                    header = await reader.readexactly(3)
                    length = header[2]
                elif indicator == 0x04:
                    header = await reader.readexactly(2)
                    length = header[1]
                elif indicator == 0x05:
                    header = await reader.readexactly(4)
                    length = (header[2] | header[3] << 8) & 0x3FFF
                else:
                    log.warning('%s: H4 framing lost (indicator 0x%02x), closing the client',
                                self.controller.name, indicator)
                    break
                body = await reader.readexactly(length)
                self.controller.on_packet(bytes([indicator]) + header + body)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.controller.host = None
            self.controller.drop_links(0x08)
            self.controller.clear_state()
            self.writer = None
            writer.close()


class EchoDevice:
    """The Bumble echo device and what the options ask of it."""

    def __init__(self, controller, name, options, host_controller):
        self.controller = controller
        self.options = options
        self.host_controller = host_controller
        config = DeviceConfiguration(name=name, address=controller.public_address,
                                     classic_enabled=True, le_enabled=False, class_of_device=0x001F00)
        self.device = Device(config=config, host=Host(controller, controller))
        self.device.sdp_service_records = {0x00010001: self.serial_port_record(0x00010001, 1)}
        server = rfcomm.Server(self.device)
        server.listen(self.accept, channel=1)
        self.device.on('connection', self.on_connection)
        self.host_session_started = False

    @staticmethod
    def serial_port_record(handle, channel):
        return rfcomm.make_service_sdp_records(handle, channel, SERIAL_PORT) + [
            sdp.ServiceAttribute(0x0100, sdp.DataElement.text_string(b'Bumble Echo SPP')),
        ]

    def on_connection(self, connection):
        if connection.transport != core.PhysicalTransport.BR_EDR:
            return
        say(f'PEER-LINK up address={text(connection.peer_address)}')
        connection.on('disconnection', lambda reason: say(
            f'PEER-LINK down address={text(connection.peer_address)} reason=0x{reason:02X}'))
        if self.options.pair and connection.role == hci.Role.PERIPHERAL:
            asyncio.get_running_loop().create_task(self.pair(connection))

    async def pair(self, connection):
        try:
            await asyncio.wait_for(connection.authenticate(), GUARD)
            say(f'PEER-PAIR ok address={text(connection.peer_address)}')
        except Exception as error:  # reported, the peer keeps running
            say(f'PEER-PAIR failed address={text(connection.peer_address)} error={error!r}')

    def accept(self, dlc):
        connection = dlc.multiplexer.l2cap_channel.connection
        limit = self.options.drop_after
        echoed = 0

        def on_data(data):
            nonlocal echoed
            if limit is None:
                dlc.write(data)
                return
            room = limit - echoed
            if room <= 0:
                return
            dlc.write(data[:room])
            echoed += min(room, len(data))
            if echoed >= limit:
                asyncio.get_running_loop().create_task(self.drop(dlc, connection))

        dlc.sink = on_data
        if self.options.no_credits:
            dlc.rx_credits_threshold = -1  # never tops the host up: only PN's initial credits

    async def drop(self, dlc, connection):
        mode = self.options.drop_mode
        try:
            await asyncio.wait_for(dlc.drain(), GUARD)
            await asyncio.sleep(0.1)
            say(f'PEER-DROP mode={mode} after={self.options.drop_after}')
            if mode == 'acl':
                await connection.disconnect(reason=0x13)
            elif mode == 'dlc':
                await asyncio.wait_for(dlc.disconnect(), GUARD)
            elif mode == 'socket':
                server = self.host_controller.host  # controller A's H4 server: its TCP client goes
                if isinstance(server, H4Server) and server.writer is not None:
                    server.writer.close()
            else:
                link_loss(self.controller, connection.peer_address)
        except Exception as error:
            log.warning('drop (%s) failed: %r', mode, error)

    # --- the device pages our host (--connect-to-host, --raw-rfcomm) --------------------------

    def host_scan_enabled(self, value):
        if value & 0x02 and not self.host_session_started:
            self.host_session_started = True
            task = self.rfcomm_to_host() if self.options.connect_to_host else self.raw_rfcomm_to_host()
            asyncio.get_running_loop().create_task(task)

    def host_session_reset(self):
        self.host_session_started = False

    async def connect_to_host(self):
        await asyncio.sleep(0.2)  # let the host finish its set-up after it enabled page scan
        connection = await self.device.connect(self.host_controller.public_address,
                                               transport=core.PhysicalTransport.BR_EDR, timeout=10)
        if self.options.pair:
            await self.pair(connection)
        return connection

    async def rfcomm_to_host(self):
        try:
            connection = await self.connect_to_host()
            say(f'PEER-RFCOMM connected address={text(connection.peer_address)}')
            channel = await self.serial_port_channel(connection)
            say(f'PEER-RFCOMM channel={channel}')
            if channel is None:
                say('PEER-RFCOMM error=no Serial Port record')
                await connection.disconnect()
                return
            client = rfcomm.Client(connection)
            multiplexer = await client.start()
            dlc = await multiplexer.open_dlc(channel)
            received = bytearray()

            def on_data(data):
                received.extend(data)

            dlc.sink = on_data
            line = b'hello from Bumble\n'
            dlc.write(line)
            await step(dlc.drain(), 'the line going out (RFCOMM credits)')
            say(f'PEER-RFCOMM sent={line.hex()}')
            say(f'PEER-RFCOMM received={bytes(received).hex()}')
            await step(dlc.disconnect(), 'UA for DISC on the DLC')
            await step(multiplexer.disconnect(), 'UA for DISC on DLCI 0')
            await close_l2cap(multiplexer.l2cap_channel)
            await connection.disconnect()
            say('PEER-RFCOMM done')
        except Exception as error:
            say(f'PEER-RFCOMM error={error!r}')

    @staticmethod
    async def serial_port_channel(connection):
        async with sdp.Client(connection) as client:
            records = await client.search_attributes(
                uuids=[SERIAL_PORT], attribute_ids=[sdp.SDP_PROTOCOL_DESCRIPTOR_LIST_ATTRIBUTE_ID])
        for attributes in records:
            for attribute in attributes:
                if attribute.id != sdp.SDP_PROTOCOL_DESCRIPTOR_LIST_ATTRIBUTE_ID:
                    continue
                for descriptor in attribute.value.value:
                    items = descriptor.value
                    if len(items) >= 2 and items[0].value == RFCOMM_UUID:
                        return items[1].value
        return None

    async def raw_rfcomm_to_host(self):
        try:
            connection = await self.connect_to_host()
            channel = await connection.create_l2cap_channel(spec=l2cap.ClassicChannelSpec(psm=3, mtu=1024))
            answers = asyncio.Queue()

            def on_pdu(pdu):
                say(describe_rfcomm(pdu))
                answers.put_nowait(pdu)

            channel.sink = on_pdu
            for frame in raw_rfcomm_script():
                channel.send_pdu(frame)
                try:
                    await asyncio.wait_for(answers.get(), GUARD)
                except asyncio.TimeoutError:
                    say(f'PEER-NO-ANSWER hex={frame.hex()}')
            await asyncio.sleep(0.2)
            await close_l2cap(channel)
            await connection.disconnect()
            say('PEER-RAW done')
        except Exception as error:
            say(f'PEER-RAW error={error!r}')


async def close_l2cap(channel):
    """Closes the L2CAP channel of an RFCOMM session unless the host already did: after the UA for
    DISC on DLCI 0 a responder may close it itself (BlueZ does), and both ways are fine.

    When both ends send a Disconnection Request at once, Bumble answers the host's, closes the
    channel and never completes its own disconnect() (the host's answer finds no channel), so this
    waits for the channel's close event, which both endings emit, rather than for disconnect()."""
    if channel.state != l2cap.ClassicChannel.State.OPEN:
        say(f'PEER-L2CAP already closed by the host (state {channel.state.name})')
        return
    closed = asyncio.get_running_loop().create_future()
    channel.on(channel.EVENT_CLOSE, lambda: closed.done() or closed.set_result(None))
    request = asyncio.ensure_future(channel.disconnect())
    try:
        await step(closed, 'the L2CAP disconnection response')
    finally:
        if not request.done():
            request.cancel()


# --- hand-made RFCOMM frames (RFCOMM 1.2 on TS 07.10; we are the initiator) ----------------------

MUX_NAMES = {0x20: 'PN', 0x08: 'TEST', 0x28: 'FCON', 0x18: 'FCOFF', 0x38: 'MSC', 0x04: 'NSC', 0x24: 'RPN', 0x14: 'RLS'}
FRAME_NAMES = {0x2F: 'SABM', 0x63: 'UA', 0x0F: 'DM', 0x43: 'DISC', 0xEF: 'UIH'}


def fcs(data):
    """TS 07.10's CRC-8 (x^8+x^2+x+1, reflected, preset 0xFF), sent as its ones' complement."""
    crc = 0xFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xE0 if crc & 1 else crc >> 1
    return 0xFF - crc


def initiator_uih0(message):
    header = bytes([0x03, 0xEF, len(message) << 1 | 1])
    return header + message + bytes([fcs(header[:2])])


def mux_command(code, values):
    return bytes([code << 2 | 0x03, len(values) << 1 | 1]) + bytes(values)


def raw_rfcomm_script():
    sabm = bytes([0x03, 0x3F, 0x01])
    dlci2 = 2 << 2 | 0x03
    return [
        sabm + bytes([fcs(sabm)]),
        initiator_uih0(mux_command(0x24, [dlci2])),  # RPN query
        initiator_uih0(mux_command(0x14, [dlci2, 0x03])),  # RLS: overrun error
        initiator_uih0(mux_command(0x08, b'SwiftModem test')),  # Test
        initiator_uih0(mux_command(0x11, [])),  # a command type TS 07.10 does not define
        bytes([0x03, 0x53, 0x01, fcs(bytes([0x03, 0x53, 0x01]))]),  # DISC on DLCI 0
    ]


def describe_rfcomm(pdu):
    if len(pdu) < 3:
        return f'PEER-ANSWER type=SHORT hex={pdu.hex()}'
    dlci, cr = pdu[0] >> 2, pdu[0] >> 1 & 1
    kind = FRAME_NAMES.get(pdu[1] & 0xEF, f'CTRL-{pdu[1]:02X}')
    if kind == 'UIH' and dlci == 0:
        start = 3 if pdu[2] & 1 else 4
        message = pdu[start:-1]
        if len(message) >= 2:
            code = message[0] >> 2
            value_start = 2 if message[1] & 1 else 3
            name = MUX_NAMES.get(code, f'MUX-{code:02X}')
            return (f'PEER-ANSWER type={name} dlci=0 cr={message[0] >> 1 & 1} '
                    f'value={message[value_start:].hex()} hex={pdu.hex()}')
    return f'PEER-ANSWER type={kind} dlci={dlci} cr={cr} hex={pdu.hex()}'


# --- main ---------------------------------------------------------------------------------------

async def run(options):
    link = LocalLink()
    a = PeerController('A', link, HOST_ADDRESS, options.acl_mtu, options.acl_count)
    servers = [H4Server(a)]
    if options.expose_b is not None:
        b = PeerController('B', link, DEVICE_ADDRESS, options.acl_mtu, options.acl_count)
        echo_controller = PeerController('C', link, MOVED_ECHO_ADDRESS)
        servers.append(H4Server(b))
    else:
        echo_controller = PeerController('B', link, DEVICE_ADDRESS)
    echo = EchoDevice(echo_controller, 'Bumble Echo', options, a)
    devices = [echo.device]
    for number in range(2, options.extra_devices + 2):
        controller = PeerController(f'E{number}', link, f'00:1B:DC:00:01:{number:02X}')
        config = DeviceConfiguration(name=f'Echo {number}', address=controller.public_address,
                                     classic_enabled=True, le_enabled=False, class_of_device=0x001F00)
        devices.append(Device(config=config, host=Host(controller, controller)))
    for device in devices:
        await device.power_on()

    if options.connect_to_host or options.raw_rfcomm:
        a.scan_enable_hook = echo.host_scan_enabled
        servers[0].on_client = echo.host_session_reset
    port = await servers[0].start(options.port)
    line = f'READY port={port} host_addr={HOST_ADDRESS} device_addr={DEVICE_ADDRESS}'
    if options.expose_b is not None:
        port_b = await servers[1].start(options.expose_b)
        line += f' port_b={port_b} echo_addr={MOVED_ECHO_ADDRESS}'
    say(line)
    await asyncio.Event().wait()


def main():
    parser = argparse.ArgumentParser(description='The Bumble peer of the Bluetooth tests (see the file comment).')
    parser.add_argument('--port', type=int, default=0, help='TCP port for controller A (0: any free one)')
    parser.add_argument('--expose-b', type=int, metavar='PORT',
                        help='serve controller B (00:1B:DC:00:00:0B) over TCP too; the echo device moves to ..:0C')
    parser.add_argument('--extra-devices', type=int, default=0, metavar='N')
    parser.add_argument('--acl-mtu', type=int, default=1021, help='ACL_Data_Packet_Length of the TCP controllers')
    parser.add_argument('--acl-count', type=int, default=8, help='Total_Num_ACL_Data_Packets of the TCP controllers')
    parser.add_argument('--drop-after', type=int, metavar='BYTES', help='echo this many bytes, then drop')
    parser.add_argument('--drop-mode', choices=['acl', 'dlc', 'linkloss', 'socket'], default='acl',
                        help='acl: HCI Disconnect 0x13; dlc: RFCOMM DISC; linkloss: 0x08 both ends; '
                             'socket: controller A closes its H4/TCP client (the host loses its controller)')
    parser.add_argument('--no-credits', action='store_true',
                        help='the echo device grants the host no RFCOMM credits beyond those in PN')
    parser.add_argument('--connect-to-host', action='store_true',
                        help='once A enables page scan: connect, SDP, RFCOMM, write a line')
    parser.add_argument('--raw-rfcomm', action='store_true',
                        help='once A enables page scan: hand-made RFCOMM frames over L2CAP PSM 3')
    parser.add_argument('--pair', action='store_true', help='the echo device requests authentication')
    parser.add_argument('--verbose', action='store_true')
    options = parser.parse_args()
    if options.connect_to_host and options.raw_rfcomm:
        parser.error('--connect-to-host and --raw-rfcomm exclude each other')
    if not 1 <= options.acl_mtu <= 0xFFFF or not 1 <= options.acl_count <= 0xFFFF:
        parser.error('--acl-mtu and --acl-count must be 1...65535')
    logging.basicConfig(level=logging.DEBUG if options.verbose else logging.WARNING, stream=sys.stderr,
                        format='bt-peer %(levelname)s %(name)s: %(message)s')
    try:
        asyncio.run(run(options))
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
