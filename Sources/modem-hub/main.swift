import HubServer

print("\(HubServerInfo.name): not built yet")
