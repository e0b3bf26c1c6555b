"""The configuration keys of a 4.9.8 broker and name server, as GET_BROKER_CONFIG / GET_NAMESRV_CONFIG report them.

A 4.9.8 broker answers GET_BROKER_CONFIG with every field of its BrokerConfig, NettyServerConfig,
NettyClientConfig and MessageStoreConfig (null ones left out); the name server with its NamesrvConfig and
NettyServerConfig. `BROKER_KEYS` / `NAMESRV_KEYS` hold each key's kind (how an update's value must parse) and
4.9.8's default text. Keys whose value depends on the machine or on this emulator's own settings (names,
addresses, ports, paths) are not here: broker/core/runtime_config.py fills them from the running broker.

Kinds: "int" (32-bit), "long" (64-bit), "bool" (true/false), "double", "str", "enum" (4.9.8 never applies an
update to an enum field: it keeps its value).
"""

from __future__ import annotations

#: key -> (kind, 4.9.8 default), in 4.9.8's order within each config object
BROKER_KEYS: dict[str, tuple[str, str]] = {
    # BrokerConfig
    'brokerId': ('long', '0'),
    'brokerPermission': ('int', '6'),
    'defaultTopicQueueNums': ('int', '8'),
    'autoCreateTopicEnable': ('bool', 'true'),
    'clusterTopicEnable': ('bool', 'true'),
    'brokerTopicEnable': ('bool', 'true'),
    'autoCreateSubscriptionGroup': ('bool', 'true'),
    'messageStorePlugIn': ('str', ''),
    'msgTraceTopicName': ('str', 'RMQ_SYS_TRACE_TOPIC'),
    'traceTopicEnable': ('bool', 'false'),
    'sendMessageThreadPoolNums': ('int', '2'),
    'putMessageFutureThreadPoolNums': ('int', '2'),
    'pullMessageThreadPoolNums': ('int', '20'),
    'processReplyMessageThreadPoolNums': ('int', '20'),
    'queryMessageThreadPoolNums': ('int', '10'),
    'adminBrokerThreadPoolNums': ('int', '16'),
    'clientManageThreadPoolNums': ('int', '32'),
    'consumerManageThreadPoolNums': ('int', '32'),
    'heartbeatThreadPoolNums': ('int', '2'),
    'endTransactionThreadPoolNums': ('int', '12'),
    'flushConsumerOffsetInterval': ('int', '5000'),
    'flushConsumerOffsetHistoryInterval': ('int', '60000'),
    'rejectTransactionMessage': ('bool', 'false'),
    'fetchNamesrvAddrByAddressServer': ('bool', 'false'),
    'sendThreadPoolQueueCapacity': ('int', '10000'),
    'putThreadPoolQueueCapacity': ('int', '10000'),
    'pullThreadPoolQueueCapacity': ('int', '100000'),
    'replyThreadPoolQueueCapacity': ('int', '10000'),
    'queryThreadPoolQueueCapacity': ('int', '20000'),
    'clientManagerThreadPoolQueueCapacity': ('int', '1000000'),
    'consumerManagerThreadPoolQueueCapacity': ('int', '1000000'),
    'heartbeatThreadPoolQueueCapacity': ('int', '50000'),
    'endTransactionPoolQueueCapacity': ('int', '100000'),
    'filterServerNums': ('int', '0'),
    'longPollingEnable': ('bool', 'true'),
    'shortPollingTimeMills': ('long', '1000'),
    'notifyConsumerIdsChangedEnable': ('bool', 'true'),
    'highSpeedMode': ('bool', 'false'),
    'commercialEnable': ('bool', 'true'),
    'commercialTimerCount': ('int', '1'),
    'commercialTransCount': ('int', '1'),
    'commercialBigCount': ('int', '1'),
    'commercialBaseCount': ('int', '1'),
    'transferMsgByHeap': ('bool', 'true'),
    'maxDelayTime': ('int', '40'),
    'regionId': ('str', 'DefaultRegion'),
    'registerBrokerTimeoutMills': ('int', '6000'),
    'slaveReadEnable': ('bool', 'false'),
    'disableConsumeIfConsumerReadSlowly': ('bool', 'false'),
    'consumerFallbehindThreshold': ('long', '17179869184'),
    'brokerFastFailureEnable': ('bool', 'true'),
    'waitTimeMillsInSendQueue': ('long', '200'),
    'waitTimeMillsInPullQueue': ('long', '5000'),
    'waitTimeMillsInHeartbeatQueue': ('long', '31000'),
    'waitTimeMillsInTransactionQueue': ('long', '3000'),
    'startAcceptSendRequestTimeStamp': ('long', '0'),
    'traceOn': ('bool', 'true'),
    'enableCalcFilterBitMap': ('bool', 'false'),
    'expectConsumerNumUseFilter': ('int', '32'),
    'maxErrorRateOfBloomFilter': ('int', '20'),
    'filterDataCleanTimeSpan': ('long', '86400000'),
    'filterSupportRetry': ('bool', 'false'),
    'enablePropertyFilter': ('bool', 'false'),
    'compressedRegister': ('bool', 'false'),
    'forceRegister': ('bool', 'true'),
    'registerNameServerPeriod': ('int', '30000'),
    'transactionTimeOut': ('long', '6000'),
    'transactionCheckMax': ('int', '15'),
    'transactionCheckInterval': ('long', '60000'),
    'aclEnable': ('bool', 'false'),
    'storeReplyMessageEnable': ('bool', 'true'),
    'enableDetailStat': ('bool', 'true'),
    'autoDeleteUnusedStats': ('bool', 'false'),
    'isolateLogEnable': ('bool', 'false'),
    'configBlackList': ('str', 'configBlackList;brokerConfigPath'),
    # NettyServerConfig
    'serverWorkerThreads': ('int', '8'),
    'serverCallbackExecutorThreads': ('int', '0'),
    'serverSelectorThreads': ('int', '3'),
    'serverOnewaySemaphoreValue': ('int', '256'),
    'serverAsyncSemaphoreValue': ('int', '64'),
    'serverChannelMaxIdleTimeSeconds': ('int', '120'),
    'serverSocketSndBufSize': ('int', '0'),
    'serverSocketRcvBufSize': ('int', '0'),
    'writeBufferHighWaterMark': ('int', '0'),
    'writeBufferLowWaterMark': ('int', '0'),
    'serverSocketBacklog': ('int', '1024'),
    'serverPooledByteBufAllocatorEnable': ('bool', 'true'),
    'useEpollNativeSelector': ('bool', 'false'),
    # NettyClientConfig
    'clientWorkerThreads': ('int', '4'),
    'clientCallbackExecutorThreads': ('int', '2'),
    'clientOnewaySemaphoreValue': ('int', '65535'),
    'clientAsyncSemaphoreValue': ('int', '65535'),
    'connectTimeoutMillis': ('int', '3000'),
    'channelNotActiveInterval': ('long', '60000'),
    'clientChannelMaxIdleTimeSeconds': ('int', '120'),
    'clientSocketSndBufSize': ('int', '0'),
    'clientSocketRcvBufSize': ('int', '0'),
    'clientPooledByteBufAllocatorEnable': ('bool', 'false'),
    'clientCloseSocketIfTimeout': ('bool', 'true'),
    'useTLS': ('bool', 'false'),
    # MessageStoreConfig
    'mappedFileSizeCommitLog': ('int', '1073741824'),
    'mappedFileSizeConsumeQueue': ('int', '6000000'),
    'enableConsumeQueueExt': ('bool', 'false'),
    'mappedFileSizeConsumeQueueExt': ('int', '50331648'),
    'bitMapLengthConsumeQueueExt': ('int', '112'),  # 64, set at start to the consumer bloom filter's bit count
    'flushIntervalCommitLog': ('int', '500'),
    'commitIntervalCommitLog': ('int', '200'),
    'useReentrantLockWhenPutMessage': ('bool', 'true'),
    'flushCommitLogTimed': ('bool', 'true'),
    'flushIntervalConsumeQueue': ('int', '1000'),
    'cleanResourceInterval': ('int', '10000'),
    'deleteCommitLogFilesInterval': ('int', '100'),
    'deleteConsumeQueueFilesInterval': ('int', '100'),
    'destroyMapedFileIntervalForcibly': ('int', '120000'),
    'redeleteHangedFileInterval': ('int', '120000'),
    'deleteWhen': ('str', '04'),
    'diskMaxUsedSpaceRatio': ('int', '75'),
    'fileReservedTime': ('int', '72'),
    'putMsgIndexHightWater': ('int', '600000'),
    'maxMessageSize': ('int', '4194304'),
    'checkCRCOnRecover': ('bool', 'true'),
    'flushCommitLogLeastPages': ('int', '4'),
    'commitCommitLogLeastPages': ('int', '4'),
    'flushLeastPagesWhenWarmMapedFile': ('int', '4096'),
    'flushConsumeQueueLeastPages': ('int', '2'),
    'flushCommitLogThoroughInterval': ('int', '10000'),
    'commitCommitLogThoroughInterval': ('int', '200'),
    'flushConsumeQueueThoroughInterval': ('int', '60000'),
    'maxTransferBytesOnMessageInMemory': ('int', '262144'),
    'maxTransferCountOnMessageInMemory': ('int', '32'),
    'maxTransferBytesOnMessageInDisk': ('int', '65536'),
    'maxTransferCountOnMessageInDisk': ('int', '8'),
    'accessMessageInMemoryMaxRatio': ('int', '40'),
    'messageIndexEnable': ('bool', 'true'),
    'maxHashSlotNum': ('int', '5000000'),
    'maxIndexNum': ('int', '20000000'),
    'maxMsgsNumBatch': ('int', '64'),
    'messageIndexSafe': ('bool', 'false'),
    'haSendHeartbeatInterval': ('int', '5000'),
    'haHousekeepingInterval': ('int', '20000'),
    'haTransferBatchSize': ('int', '32768'),
    'haSlaveFallbehindMax': ('int', '268435456'),
    'brokerRole': ('enum', 'ASYNC_MASTER'),
    'flushDiskType': ('enum', 'ASYNC_FLUSH'),
    'syncFlushTimeout': ('int', '5000'),
    'slaveTimeout': ('int', '3000'),
    'messageDelayLevel': ('str', '1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h'),
    'flushDelayOffsetInterval': ('long', '10000'),
    'cleanFileForciblyEnable': ('bool', 'true'),
    'warmMapedFileEnable': ('bool', 'false'),
    'offsetCheckInSlave': ('bool', 'false'),
    'debugLockEnable': ('bool', 'false'),
    'duplicationEnable': ('bool', 'false'),
    'diskFallRecorded': ('bool', 'true'),
    'osPageCacheBusyTimeOutMills': ('long', '1000'),
    'defaultQueryMaxNum': ('int', '32'),
    'transientStorePoolEnable': ('bool', 'false'),
    'transientStorePoolSize': ('int', '5'),
    'fastFailIfNoBufferInStorePool': ('bool', 'false'),
    'enableDLegerCommitLog': ('bool', 'false'),
    'isEnableBatchPush': ('bool', 'false'),
    'enableScheduleMessageStats': ('bool', 'true'),
    'enableLmq': ('bool', 'false'),
    'enableMultiDispatch': ('bool', 'false'),
    'maxLmqConsumeQueueNum': ('int', '20000'),
    'enableScheduleAsyncDeliver': ('bool', 'false'),
    'scheduleAsyncDeliverMaxPendingLimit': ('int', '2000'),
    'scheduleAsyncDeliverMaxResendNum2Blocked': ('int', '3'),}

#: the name server's own keys (NamesrvConfig), then its NettyServerConfig ones (shared with the broker's table)
NAMESRV_KEYS: dict[str, tuple[str, str]] = {
    "productEnvName": ("str", "center"),
    "clusterTest": ("bool", "false"),
    "orderMessageEnable": ("bool", "false"),
    "configBlackList": ("str", "configBlackList;configStorePath;kvConfigPath"),
    **{k: v for k, v in BROKER_KEYS.items() if k in (
        "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads", "serverOnewaySemaphoreValue",
        "serverAsyncSemaphoreValue", "serverChannelMaxIdleTimeSeconds", "serverSocketSndBufSize",
        "serverSocketRcvBufSize", "writeBufferHighWaterMark", "writeBufferLowWaterMark", "serverSocketBacklog",
        "serverPooledByteBufAllocatorEnable", "useEpollNativeSelector")},
}

#: keys an update may never touch (4.9.8 answers NO_PERMISSION "Can not update config in black list.")
#: settings of this emulator (or of 5.x) that a 4.9.8 broker does not report: GET_BROKER_CONFIG leaves them out
#: with compat 4.9
NOT_4_9_KEYS = frozenset({
    "broadcastOffsetExpireSecond", "channelExpiredTimeoutSecond", "compat", "enableBroadcastOffsetStore",
    "enableTopicMessageTypeCheck", "minInvisibleTimeMillsForRecv", "newGroupOffset", "offsetDurability",
    "popFromRetryProbability", "recoveryCutInvalidRecords", "slaveSynchronizePeriod", "useServerSideResetOffset",
    "vipChannelEnabled"})

BROKER_ALWAYS_BLACKLISTED = ("brokerConfigPath", "rocketmqHome", "configBlackList")
NAMESRV_ALWAYS_BLACKLISTED = ("configStorePath", "kvConfigPath", "configBlackList")

_INT_RANGE = {"int": (-2**31, 2**31 - 1), "long": (-2**63, 2**63 - 1)}


def value_problem(kind: str, text: str) -> str | None:
    """Why `text` is not a valid value of that kind (None: it is)."""
    if kind in _INT_RANGE:
        try:
            number = int(text.strip())
        except ValueError:
            return f"{text!r} is not a{'n' if kind == 'int' else ''} {kind}"
        low, high = _INT_RANGE[kind]
        return None if low <= number <= high else f"{text!r} is out of range for a{'n' if kind == 'int' else ''} {kind}"
    if kind == "bool":
        return None if text.strip().lower() in ("true", "false") else f"{text!r} is not true or false"
    if kind == "double":
        try:
            float(text)
        except ValueError:
            return f"{text!r} is not a number"
    return None
